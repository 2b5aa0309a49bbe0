#include "redis_layout.hpp"

#include <hiredis/hiredis.h>

#include "redis_encoding.hpp"

namespace exactly::dedupe::redis {

using sdk::Status;

namespace {
std::string layout_text(int64_t span_ms, int64_t slices) {
  return "bucket.span=" + std::to_string(span_ms) + " bucket.slices=" + std::to_string(slices);
}

// The script refused this call: the prefix's claims were made with another layout. A
// config error naming the key that differs, so the pipeline stops instead of letting the
// duplicates of the last window through.
Status refused_layout(const Connection& c, const SlotPlan& plan, const std::string& stored) {
  auto value_of = [](const std::string& text, const std::string& key) {
    size_t at = text.find(key + "=");
    if (at == std::string::npos) return std::string();
    at += key.size() + 1;
    return text.substr(at, text.find(' ', at) - at);
  };
  const std::string key =
      value_of(stored, "bucket.span") != value_of(plan.layout, "bucket.span") ? "bucket.span"
                                                                              : "bucket.slices";
  return Status::config(
      key, "dedupe-redis: " + c.endpoint().text() + ": the claims under key.prefix '" +
               plan.prefix + "' were made with " + stored + ", this config has " + plan.layout +
               ": ids claimed before would be looked for in other keys and their duplicates "
               "would pass. Keep the old values; or use another key.prefix (a new, empty "
               "store); or, to accept those duplicates, delete the key '" + plan.prefix +
               "layout' on every shard (it expires by itself with the last claim, up to "
               "retention.max.age + bucket.span after it)");
}
}  // namespace

SlotPlan SlotPlan::at(const RedisSettings& s, const std::string& prefix, int64_t now_ms) {
  SlotPlan p;
  p.prefix = prefix;
  p.slot = now_ms / s.bucket_span_ms;
  p.consult = s.slots_to_consult();
  p.expire_at_ms = (p.slot + 1) * s.bucket_span_ms + s.window_ms;
  p.layout = layout_text(s.bucket_span_ms, s.bucket_slices);
  return p;
}

Layout::Layout(const std::vector<RedisEndpoint>& shards, int64_t timeout_ms, const RedisAuth& auth,
               std::shared_ptr<const TlsContext> tls) {
  for (const auto& e : shards) {
    Shard s;
    s.conn = std::make_unique<Connection>(e, timeout_ms, auth, tls);
    shards_.push_back(std::move(s));
  }
}

std::string Layout::describe() const {
  std::string out = "[";
  for (size_t i = 0; i < shards_.size(); ++i)
    out += (i ? ", " : "") + shards_[i].conn->endpoint().text();
  return out + "]";
}

Status Layout::claim(const std::vector<ClaimItem>& items, const std::vector<uint32_t>& which,
                     Mode mode, const SlotPlan& plan,
                     std::vector<std::pair<uint32_t, std::string>>& others) {
  Status st = claim_pipelined(items, which, mode, plan, others);
  if (!st) drop_all();
  return st;
}

void Layout::drop_all() {
  // A failure may leave queued commands or unread replies on the other shards'
  // connections; new connections cannot confuse one call's reply with another's.
  for (auto& s : shards_) s.conn->drop();
}

Status Layout::claim_pipelined(const std::vector<ClaimItem>& items,
                               const std::vector<uint32_t>& which, Mode mode,
                               const SlotPlan& plan,
                               std::vector<std::pair<uint32_t, std::string>>& others) {
  const int32_t n = static_cast<int32_t>(shards_.size());
  for (auto& s : shards_) s.items.clear();
  for (uint32_t i : which) shards_[jump_hash(items[i].shard_hash, n)].items.push_back(i);

  const std::string slot = std::to_string(plan.slot);
  const std::string consult = std::to_string(plan.consult);
  const std::string expire = std::to_string(plan.expire_at_ms);
  const std::string olen = std::to_string(kOwnerBytes);
  const std::string_view mode_text = mode == Mode::claim ? "claim" : "check";
  auto args = [&](Shard& s, std::vector<std::string_view> head) -> const std::vector<std::string_view>& {
    argv_ = std::move(head);
    argv_.insert(argv_.end(), {plan.prefix, slot, consult, expire, mode_text, olen, plan.layout});
    for (uint32_t i : s.items) argv_.insert(argv_.end(), {items[i].slice, items[i].field, items[i].value});
    return argv_;
  };
  // Queue every shard's call, send them all, then read: the servers run side by side.
  for (auto& s : shards_) {
    if (s.items.empty()) continue;
    Status st = s.conn->ensure();  // connected first: the head carries the script's SHA1
    if (!st) return st;
    st = s.conn->append(args(s, s.conn->evalsha_head()));
    if (!st) return st;
  }
  for (auto& s : shards_) {
    if (s.items.empty()) continue;
    Status st = s.conn->flush();
    if (!st) return st;
  }
  for (auto& s : shards_) {
    if (s.items.empty()) continue;
    Reply r;
    Status st = s.conn->read(r);
    if (!st) return st;
    if (is_noscript(r.get())) {
      // The server lost its script cache (restart, SCRIPT FLUSH): send the text once;
      // EVAL also caches it again for the next EVALSHA.
      st = s.conn->call(args(s, Connection::eval_head()), r);
      if (!st) return st;
    }
    if (r->type == REDIS_REPLY_ERROR) {
      static constexpr std::string_view kRefused = "EXACTLY_LAYOUT ";
      std::string_view text(r->str, r->len);
      if (text.substr(0, kRefused.size()) == kRefused)
        return refused_layout(*s.conn, plan, std::string(text.substr(kRefused.size())));
      return s.conn->reply_error("claim script", r.get());
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0)
      return Status::fatal("dedupe-redis: " + s.conn->endpoint().text() +
                           ": the claim script answered an unexpected reply");
    if (mode == Mode::claim) {
      s.written = true;
      s.written_generation = s.conn->generation();
    }
    for (size_t k = 0; k + 1 < r->elements; k += 2) {
      const redisReply* pos = r->element[k];
      const redisReply* val = r->element[k + 1];
      if (pos->type != REDIS_REPLY_INTEGER || val->type != REDIS_REPLY_STRING || pos->integer < 1 ||
          static_cast<size_t>(pos->integer) > s.items.size())
        return Status::fatal("dedupe-redis: " + s.conn->endpoint().text() +
                             ": the claim script answered an unexpected entry");
      others.emplace_back(s.items[static_cast<size_t>(pos->integer) - 1],
                          std::string(val->str, val->len));
    }
  }
  return Status::ok();
}

Status Layout::wait_replicas(int64_t replicas, int64_t timeout_ms) {
  Status st = wait_pipelined(replicas, timeout_ms);
  if (!st) drop_all();
  return st;
}

Status Layout::wait_pipelined(int64_t replicas, int64_t timeout_ms) {
  const std::string want = std::to_string(replicas), timeout = std::to_string(timeout_ms);
  for (auto& s : shards_) {
    if (!s.written) continue;
    // WAIT counts the writes of the connection it is sent on; a connection made since
    // the claims cannot vouch for them, so the round is replayed instead.
    if (!s.conn->connected() || s.conn->generation() != s.written_generation)
      return Status::retriable("dedupe-redis: " + s.conn->endpoint().text() +
                               ": reconnected since this round's claims; replaying the round");
    Status st = s.conn->append({"WAIT", want, timeout});
    if (!st) return st;
    st = s.conn->flush();
    if (!st) return st;
  }
  for (auto& s : shards_) {
    if (!s.written) continue;
    Reply r;
    // The server answers WAIT after up to durability.timeout: a receive bounded by
    // redis.timeout alone cut it short when that was not longer.
    Status st = s.conn->read_blocking(r, timeout_ms);
    if (!st) return st;
    if (r->type == REDIS_REPLY_ERROR) return s.conn->reply_error("WAIT", r.get());
    if (r->type != REDIS_REPLY_INTEGER || r->integer < replicas)
      return Status::retriable("dedupe-redis: " + s.conn->endpoint().text() + ": only " +
                               std::to_string(r->type == REDIS_REPLY_INTEGER ? r->integer : 0) +
                               " of " + want + " replicas acknowledged the round's claims within " +
                               timeout + " ms (durability: replicas; a server with fewer "
                               "connected replicas never acknowledges: see its INFO replication. "
                               "Retried until enough are back)");
  }
  return Status::ok();
}

Status Layout::check_aof_always() {
  for (auto& s : shards_) {
    if (!s.written) continue;
    if (s.aof_checked_generation && s.aof_generation == s.conn->generation()) continue;
    Reply r;
    Status st = s.conn->call({"CONFIG", "GET", "append*"}, r);
    if (!st) return st;
    std::string appendonly, appendfsync;
    for (size_t k = 0; r->type == REDIS_REPLY_ARRAY && k + 1 < r->elements; k += 2) {
      std::string key(r->element[k]->str, r->element[k]->len);
      std::string val(r->element[k + 1]->str, r->element[k + 1]->len);
      if (key == "appendonly") appendonly = val;
      if (key == "appendfsync") appendfsync = val;
    }
    if (appendonly != "yes" || appendfsync != "always")
      return Status::config("durability",
                            "durability: aof-always, but Redis " + s.conn->endpoint().text() +
                                " runs with appendonly " + appendonly + ", appendfsync " +
                                appendfsync + ": claims answered by it may be lost in a crash. "
                                "Set appendonly yes and appendfsync always there, or choose "
                                "another durability");
    s.aof_checked_generation = true;
    s.aof_generation = s.conn->generation();
  }
  return Status::ok();
}

void Layout::forget_writes() {
  for (auto& s : shards_) s.written = false;
}

}  // namespace exactly::dedupe::redis
