#include "redis_dedupe_transform.hpp"

#include <chrono>
#include <ctime>

#include "claim_codec.hpp"
#include "redis_encoding.hpp"
#include "stage_line.hpp"

namespace exactly::dedupe {

using sdk::Status;

namespace {
std::string default_prefix(const std::string& pipeline, const std::string& stage) {
  return "exactly:" + pipeline + ":" + stage + ":";
}

std::string when(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}
}  // namespace

int64_t RedisDedupeTransform::now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

RedisDedupeTransform::RedisDedupeTransform(sdk::Host host, const sdk::Config& config)
    : host_(host), settings_(RedisSettings::parse(config)), ids_(settings_.id) {
  apply(settings_);
  say_once_per_stage(host_, "shards", "dedupe-redis: shards " + current_->describe() +
             (previous_ ? " from " + when(settings_.cutover_ms) + ", before that " +
                              previous_->describe()
                        : std::string()) +
             "; window " + std::to_string(settings_.window_ms / 1000) + " s in slots of " +
             std::to_string(settings_.bucket_span_ms / 1000) + " s");
  // Said, not silent: right after a reshard this is a stale cutover, not a leftover.
  if (!settings_.previous_shards.empty() && previous_ == nullptr)
    say_once_per_stage(host_, "stale cutover", "dedupe-redis: shards.previous is not consulted: shards.cutover (" + when(settings_.cutover_ms) +
               ") is long enough ago that every claim made in it has expired. Remove both keys; "
               "if the shards were just changed, set shards.cutover a little in the future instead");
}

sdk::Status RedisDedupeTransform::validate(const sdk::Config& config) {
  RedisSettings s = RedisSettings::parse(config);
  // Reads the CA, certificate and key files: a wrong path is found before anything runs.
  if (s.tls.enabled) redis::TlsContext::make(s.tls);
  return sdk::Status::ok();
}

void RedisDedupeTransform::apply(RedisSettings next) {
  // First, as it may throw (a certificate file gone): a refused reload keeps the running
  // settings whole. Made again on every apply, so a reload picks up renewed files.
  auto tls = next.tls.enabled ? redis::TlsContext::make(next.tls) : nullptr;
  settings_ = std::move(next);
  tls_ = std::move(tls);
  prefix_ = settings_.key_prefix.empty() ? default_prefix(host_.pipeline(), host_.component_id())
                                         : settings_.key_prefix;
  current_ = std::make_unique<redis::Layout>(settings_.shards, settings_.timeout_ms, settings_.auth, tls_);
  previous_.reset();
  if (!settings_.previous_shards.empty() && now_ms() < settings_.previous_retired_at_ms())
    previous_ = std::make_unique<redis::Layout>(settings_.previous_shards, settings_.timeout_ms,
                                                settings_.auth, tls_);
}

Status RedisDedupeTransform::assign(const std::vector<sdk::Partition>& parts) {
  for (const auto& p : parts) {
    if (p.name.empty())
      return Status::fatal("dedupe-redis: partition id " + std::to_string(p.id) +
                           " has no name; claims name their owner by partition name");
    Part& part = parts_[p.id];
    part.labels = "partition=" + p.name;
    part.tag = redis::partition_tag(p.name);
  }
  return Status::ok();
}

Status RedisDedupeTransform::revoke(const std::vector<sdk::Partition>& parts) {
  // Nothing to close or hand over: the claims stay in Redis for whoever takes over.
  for (const auto& p : parts) parts_.erase(p.id);
  return Status::ok();
}

Status RedisDedupeTransform::process(const sdk::Batch& in, const sdk::Emitter& out) {
  const size_t n = in.size();
  if (n == 0) return Status::ok();
  items_.assign(n, Item{});
  claims_.resize(n);
  keys_.clear();
  reasons_.clear();
  fields_.clear();
  values_.clear();
  which_.clear();
  // Fields and values are appended to buffers first and viewed once they stop growing.
  std::vector<std::pair<size_t, size_t>> spans(n * 2);
  for (size_t i = 0; i < n; ++i) {
    const ex_record& r = in[i];
    auto found = parts_.find(r.partition);
    if (found == parts_.end())
      return Status::fatal("dedupe-redis: record at offset " + std::to_string(r.offset) +
                           " is from partition id " + std::to_string(r.partition) +
                           ", which is not assigned to this stage");
    Item& it = items_[i];
    it.part = &found->second;
    keys_.clear();
    std::string reason;
    if (!ids_.extract(r, keys_, reason)) {
      it.reject = static_cast<int32_t>(reasons_.size());
      reasons_.push_back(std::move(reason));
      continue;
    }
    size_t f = fields_.size();
    redis::field_of(keys_, fields_);
    size_t v = values_.size();
    redis::append_owner(values_, it.part->tag, r.offset);
    if (settings_.fingerprint_bytes)
      redis::append_fingerprint(values_, XXH3_64bits(r.value.ptr, r.value.len),
                                settings_.fingerprint_bytes);
    spans[2 * i] = {f, fields_.size() - f};
    spans[2 * i + 1] = {v, values_.size() - v};
    which_.push_back(static_cast<uint32_t>(i));
  }
  for (uint32_t i : which_) {
    redis::ClaimItem& c = claims_[i];
    c.field = std::string_view(fields_).substr(spans[2 * i].first, spans[2 * i].second);
    c.value = std::string_view(values_).substr(spans[2 * i + 1].first, spans[2 * i + 1].second);
    c.shard_hash = redis::shard_hash(c.field);
    c.slice = std::to_string(redis::slice_hash(c.field) % static_cast<uint64_t>(settings_.bucket_slices));
  }

  // Which layouts this batch asks (Tapjoy's previous / current configuration):
  //   before the cutover     the previous layout only;
  //   during the grace       the previous (claim), then the current for what passed;
  //   until the retirement   the previous (look up only), then the current;
  //   afterwards             the current only.
  // A host whose clock or reload is behind still claims in the previous layout during
  // the grace, and so does every host past the cutover: the previous layout orders
  // them, so no id is emitted twice while the hosts cross over.
  const int64_t now = now_ms();
  const redis::SlotPlan plan = redis::SlotPlan::at(settings_, prefix_, now);
  others_.clear();
  if (previous_ && now >= settings_.previous_retired_at_ms()) {
    host_.info("dedupe-redis: previous shard layout " + previous_->describe() +
               " retired: every claim made in it has expired; shards.previous and "
               "shards.cutover can be removed from the configuration");
    previous_.reset();
  }
  if (previous_ && now < settings_.cutover_ms) {
    Status st = previous_->claim(claims_, which_, redis::Mode::claim, plan, others_);
    if (!st) return st;
  } else {
    if (previous_) {
      const bool grace = now < settings_.cutover_ms + settings_.cutover_grace_ms;
      Status st = previous_->claim(claims_, which_, grace ? redis::Mode::claim : redis::Mode::check,
                                   plan, others_);
      if (!st) return st;
      // Only ids that the previous layout does not give to another record go on.
      for (auto& [i, v] : others_) items_[i].other = true;
      survivors_.clear();
      for (uint32_t i : which_)
        if (!items_[i].other) survivors_.push_back(i);
      which_.swap(survivors_);
    }
    Status st = current_->claim(claims_, which_, redis::Mode::claim, plan, others_);
    if (!st) return st;
  }
  for (auto& [i, v] : others_) {
    items_[i].other = true;
    items_[i].stored = std::move(v);
  }
  return decide(in, out);
}

Status RedisDedupeTransform::decide(const sdk::Batch& in, const sdk::Emitter& out) {
  const uint32_t fp_bytes = settings_.fingerprint_bytes;
  for (size_t i = 0; i < in.size(); ++i) {
    Item& it = items_[i];
    Part& part = *it.part;
    if (it.reject >= 0) {
      ++part.counts.id_errors;
      out.reject(i, reasons_[it.reject]);
      continue;
    }
    if (!it.other) {  // claimed now, or a replay of its owner
      ++part.counts.kept;
      out.keep(i);
      continue;
    }
    uint32_t owner_fp_bytes = 0;
    const uint64_t owner_fp = redis::stored_fingerprint(it.stored, owner_fp_bytes);
    const uint64_t fp = fp_bytes ? XXH3_64bits(in[i].value.ptr, in[i].value.len) : 0;
    if (same_content(owner_fp, owner_fp_bytes, fp, fp_bytes)) {
      ++part.counts.duplicates;
      continue;
    }
    ++part.counts.conflicts;
    const std::string owner = "offset " + std::to_string(redis::owner_offset(it.stored));
    switch (settings_.on_conflict) {
      case ConflictPolicy::duplicate:
        ++part.counts.duplicates;
        break;
      case ConflictPolicy::reject:
        out.reject(i, "dedupe conflict: id already claimed by " + owner + " with different content");
        break;
      case ConflictPolicy::stop:
        flush_counts(part);
        return Status::config("on.conflict", "dedupe conflict at offset " +
                                                 std::to_string(in[i].offset) + " (" + part.labels +
                                                 "): the id was claimed by " + owner +
                                                 " with different content (on.conflict: stop)");
    }
  }
  for (auto& [id, part] : parts_) flush_counts(part);
  return Status::ok();
}

void RedisDedupeTransform::flush_counts(Part& p) {
  Counts& c = p.counts;
  const char* l = p.labels.c_str();
  if (c.kept) host_.counter("dedupe_kept_total", static_cast<double>(c.kept), l);
  if (c.duplicates) host_.counter("dedupe_duplicates_total", static_cast<double>(c.duplicates), l);
  if (c.conflicts) host_.counter("dedupe_conflicts_total", static_cast<double>(c.conflicts), l);
  if (c.id_errors) host_.counter("dedupe_id_errors_total", static_cast<double>(c.id_errors), l);
  c = Counts{};
}

Status RedisDedupeTransform::prepare_commit() {
  // The claims are in Redis already (written by process()); what is left is to make
  // sure they outlive a Redis crash as far as `durability` promises.
  for (redis::Layout* l : {current_.get(), previous_.get()}) {
    if (l == nullptr) continue;
    Status st;
    switch (settings_.durability) {
      case Durability::none:
        break;
      case Durability::aof_always:
        // Redis fsyncs the AOF before it answers a write: the answer was the proof.
        st = l->check_aof_always();
        break;
      case Durability::replicas:
        st = l->wait_replicas(settings_.durability_replicas, settings_.durability_timeout_ms);
        break;
    }
    if (!st) return st;
    l->forget_writes();
  }
  return Status::ok();
}

Status RedisDedupeTransform::reconfigure(const sdk::Config& config) {
  RedisSettings next = RedisSettings::parse(config);
  if (next.id.source != settings_.id.source || next.id.header != settings_.id.header ||
      next.id.pointer != settings_.id.pointer || next.id.max_bytes != settings_.id.max_bytes)
    return Status::unsupported("the id extraction (id.*) changed");
  const bool layout_changed = next.shards != settings_.shards ||
                              next.previous_shards != settings_.previous_shards ||
                              next.cutover_ms != settings_.cutover_ms;
  if (layout_changed && next.shards != settings_.shards && !settings_.previous_shards.empty() &&
      previous_ && next.previous_shards != settings_.shards)
    host_.warn("dedupe-redis: the shard layout changes again while " + previous_->describe() +
               " is still consulted; claims made only there will no longer be found");
  if (layout_changed && next.shards != settings_.shards && next.previous_shards != settings_.shards)
    host_.warn("WARNING dedupe-redis: shards changed from " + current_->describe() +
               " without listing them as shards.previous with a shards.cutover: ids claimed in "
               "the old layout will not be found and their duplicates will pass");
  // A reshard whose cutover is left from an earlier one: its previous layout counts as
  // retired at once, as if it had not been listed.
  const int64_t now = now_ms();
  if (next.shards != settings_.shards && next.previous_shards == settings_.shards &&
      now >= next.previous_retired_at_ms())
    host_.warn("WARNING dedupe-redis: shards changed, with the old list as shards.previous, but "
               "shards.cutover (" + when(next.cutover_ms) + ") is so long ago that it is retired "
               "already and never consulted: ids claimed in it will not be found and their "
               "duplicates will pass. Set shards.cutover a little in the future");
  else if (next.shards != settings_.shards && next.previous_shards == settings_.shards &&
           now > next.cutover_ms + next.cutover_grace_ms)
    host_.warn("WARNING dedupe-redis: shards.cutover (" + when(next.cutover_ms) + ") is already "
               "past with its grace: hosts that reload later claim in the new layout at once, "
               "and a duplicate between them and the hosts still on the old list can pass. Set "
               "shards.cutover a little in the future");
  // Where claims live: another value puts new claims, and looks old ones up, elsewhere.
  // The bucket layout is also kept beside the claims, so the store itself refuses a new
  // one while claims of the old live (redis_claim_script.hpp); a new key.prefix is a new,
  // empty store, which nothing can tell from a mistake.
  auto moved = [&](const char* key, const std::string& from, const std::string& to,
                   const char* outcome) {
    if (from != to)
      host_.warn(std::string("WARNING dedupe-redis: ") + key + " changed from " + from + " to " +
                 to + ": claims already made are laid out by the old value; " + outcome);
  };
  const char* refused =
      "while any of them lives (up to retention.max.age + bucket.span) the store refuses the new value at the next "
      "claim and the pipeline stops with a config error";
  moved("bucket.slices", std::to_string(settings_.bucket_slices), std::to_string(next.bucket_slices),
        refused);
  moved("bucket.span", std::to_string(settings_.bucket_span_ms) + " ms",
        std::to_string(next.bucket_span_ms) + " ms", refused);
  moved("key.prefix", "'" + settings_.key_prefix + "'", "'" + next.key_prefix + "'",
        "they will not be found, and duplicates of ids seen in the last retention.max.age "
        "will pass");
  apply(std::move(next));
  say_once_per_stage(host_, "shards", "dedupe-redis: reconfigured; shards " + current_->describe() +
             (previous_ ? " from " + when(settings_.cutover_ms) + " (previous " +
                              previous_->describe() + " consulted until " +
                              when(settings_.previous_retired_at_ms()) + ")"
                        : std::string()));
  return Status::ok();
}

}  // namespace exactly::dedupe
