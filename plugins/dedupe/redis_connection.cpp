#include "redis_connection.hpp"

#include <hiredis/hiredis.h>

#include <cstring>

#include "redis_claim_script.hpp"

namespace exactly::dedupe::redis {

using sdk::Status;

Reply& Reply::operator=(Reply&& o) noexcept {
  if (this != &o) {
    if (r_) freeReplyObject(r_);
    r_ = o.r_;
    o.r_ = nullptr;
  }
  return *this;
}
Reply::~Reply() {
  if (r_) freeReplyObject(r_);
}

bool is_noscript(const redisReply* r) {
  return r != nullptr && r->type == REDIS_REPLY_ERROR && std::strncmp(r->str, "NOSCRIPT", 8) == 0;
}

Connection::Connection(RedisEndpoint endpoint, int64_t timeout_ms, RedisAuth auth,
                       std::shared_ptr<const TlsContext> tls)
    : endpoint_(std::move(endpoint)), timeout_ms_(timeout_ms), auth_(std::move(auth)), tls_(std::move(tls)) {}

Connection::~Connection() { drop(); }

void Connection::drop() {
  socket_.close();
  if (reader_) redisReaderFree(reader_);
  reader_ = nullptr;
  pending_.clear();
}

Status Connection::read_blocking(Reply& out, int64_t blocks_ms) {
  socket_.set_receive_timeout(timeout_ms_ + blocks_ms);
  Status st = read(out);
  socket_.set_receive_timeout(timeout_ms_);  // a no-op when the read dropped the socket
  return st;
}

Status Connection::io_failure(std::string_view what, const SocketError& err) {
  std::string why = err.text.empty() ? "connection lost" : err.text;
  // A receive timeout is the socket's EAGAIN: say what it means.
  const bool timed_out = why == "Resource temporarily unavailable";
  if (timed_out) why = "no answer within redis.timeout (" + std::to_string(timeout_ms_) + " ms)";
  std::string m = "dedupe-redis: " + endpoint_.text() + ": " + std::string(what) + ": " + why +
                  (timed_out ? "" : plaintext_hint());
  drop();
  // A certificate that is not trusted, or TLS against a plaintext port, stays so: stop
  // and name the key instead of retrying forever.
  if (!err.retry) return Status::config(err.key, m);
  return Status::retriable(m);
}

Status Connection::reply_error(std::string_view what, const redisReply* r) const {
  std::string text(r->str, r->len);
  std::string m = "dedupe-redis: " + endpoint_.text() + ": " + std::string(what) + ": " + text;
  // Conditions that pass on their own: a server loading its data after a restart, a
  // script or replica still busy, a failover in progress, memory that eviction or an
  // operator may free. Anything else (a wrong key type, a broken script) will not.
  static const char* const kTransient[] = {"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN",
                                           "READONLY", "NOREPLICAS", "OOM", "CLUSTERDOWN"};
  // A full server stays full until someone acts: say what to do (QA: a bare OOM line,
  // retried for ever).
  if (text.compare(0, 3, "OOM") == 0)
    m += " (the server is at its maxmemory: raise it, or keep fewer ids with a shorter retention.max.age; "
         "a maxmemory-policy that evicts keys would drop claims. Retried until it has room)";
  for (const char* p : kTransient)
    if (text.compare(0, std::strlen(p), p) == 0) return Status::retriable(m);
  // Credentials do not fix themselves: a config error names the key (the pipeline stops
  // instead of restarting forever).
  if (text.compare(0, 6, "NOAUTH") == 0)
    return Status::config("password", m + " (the server wants a password: set password, and "
                                          "username for an ACL user)");
  if (text.compare(0, 9, "WRONGPASS") == 0 || text.find("invalid password") != std::string::npos ||
      text.find("invalid username-password") != std::string::npos)
    return Status::config("password", m);
  if (text.find("without any password configured") != std::string::npos)
    return Status::config("password", m + " (the server has no password: leave password out, or "
                                          "give the server one)");
  return Status::fatal(m);
}

std::string Connection::plaintext_hint() const {
  // A server that takes only TLS closes a plaintext connection (or answers it with a
  // TLS alert) before its first reply.
  return tls_ == nullptr && awaiting_first_reply_
             ? " (a server that takes only TLS connections does this: set tls: true)"
             : "";
}

Status Connection::ensure() {
  if (reader_ != nullptr) return Status::ok();
  SocketError err;
  if (!socket_.open(endpoint_, timeout_ms_, tls_.get(), err)) return io_failure("cannot connect", err);
  reader_ = redisReaderCreate();
  if (reader_ == nullptr) {
    socket_.close();
    return Status::retriable("dedupe-redis: " + endpoint_.text() + ": out of memory");
  }
  awaiting_first_reply_ = true;
  Reply r;
  Status st;
  if (!auth_.password.empty())
    st = auth_.username.empty() ? call({"AUTH", auth_.password}, r)
                                : call({"AUTH", auth_.username, auth_.password}, r);
  if (st) st = call({"SCRIPT", "LOAD", kClaimScript}, r);
  // A connection without its script is not ready: the next call connects again.
  if (!st) {
    drop();
    return st;
  }
  if (r->type != REDIS_REPLY_STRING) {
    drop();
    return Status::fatal("dedupe-redis: " + endpoint_.text() + ": SCRIPT LOAD answered no SHA1");
  }
  sha_.assign(r->str, r->len);
  // An evicting server forgets claims without an error: refuse it. A server that does
  // not allow CONFIG (some managed services) is taken on trust.
  st = append({"CONFIG", "GET", "maxmemory-policy"});
  if (st) st = flush();
  Reply policy;
  if (st) st = read(policy);
  if (!st) return st;
  if (policy->type == REDIS_REPLY_ARRAY && policy->elements == 2 &&
      policy->element[1]->type == REDIS_REPLY_STRING &&
      std::string_view(policy->element[1]->str, policy->element[1]->len) != "noeviction") {
    std::string p(policy->element[1]->str, policy->element[1]->len);
    drop();
    return Status::config("shards", "dedupe-redis: " + endpoint_.text() + " runs with maxmemory-policy " +
                                        p + ": it would evict claims silently and let their "
                                        "duplicates pass. Set maxmemory-policy noeviction there");
  }
  ++generation_;
  return Status::ok();
}

Status Connection::append(const std::vector<std::string_view>& argv) {
  Status st = ensure();
  if (!st) return st;
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  ptrs.reserve(argv.size());
  lens.reserve(argv.size());
  for (auto a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  char* cmd = nullptr;
  int len = redisFormatCommandArgv(&cmd, static_cast<int>(argv.size()), ptrs.data(), lens.data());
  if (len < 0 || cmd == nullptr) {
    drop();
    return Status::retriable("dedupe-redis: " + endpoint_.text() + ": cannot queue a command: out of memory");
  }
  pending_.append(cmd, static_cast<size_t>(len));
  redisFreeCommand(cmd);
  return Status::ok();
}

Status Connection::flush() {
  if (reader_ == nullptr) return Status::retriable("dedupe-redis: " + endpoint_.text() + ": not connected");
  SocketError err;
  if (!pending_.empty() && !socket_.send_all(pending_.data(), pending_.size(), err))
    return io_failure("send failed", err);
  pending_.clear();
  return Status::ok();
}

Status Connection::next_reply(Reply& out, std::string_view what) {
  char buf[64 * 1024];
  for (;;) {
    void* r = nullptr;
    if (redisReaderGetReply(reader_, &r) != REDIS_OK) {
      std::string m = "dedupe-redis: " + endpoint_.text() + ": " + std::string(what) +
                      ": not a Redis answer (" + reader_->errstr + ")" + plaintext_hint();
      drop();
      return Status::retriable(m);
    }
    if (r != nullptr) {
      awaiting_first_reply_ = false;
      out = Reply(static_cast<redisReply*>(r));
      return Status::ok();
    }
    SocketError err;
    size_t n = socket_.receive(buf, sizeof buf, err);
    if (n == 0) return io_failure(what, err);
    if (redisReaderFeed(reader_, buf, n) != REDIS_OK) {
      drop();
      return Status::retriable("dedupe-redis: " + endpoint_.text() + ": out of memory");
    }
  }
}

Status Connection::read(Reply& out) {
  if (reader_ == nullptr) return Status::retriable("dedupe-redis: " + endpoint_.text() + ": not connected");
  return next_reply(out, "no reply");
}

Status Connection::call(const std::vector<std::string_view>& argv, Reply& out) {
  // As hiredis' redisCommand: queued commands go first, the first reply is this one's.
  Status st = append(argv);
  if (st) st = flush();
  if (st) st = next_reply(out, std::string(argv[0]) + " failed");
  if (!st) return st;
  if (out->type == REDIS_REPLY_ERROR) {
    st = reply_error(argv[0], out.get());
    if (st.code() == EX_ERR_RETRIABLE) drop();  // e.g. LOADING: reconnect and reload later
  }
  return st;
}

std::vector<std::string_view> Connection::evalsha_head() const { return {"EVALSHA", sha_, "0"}; }
std::vector<std::string_view> Connection::eval_head() { return {"EVAL", kClaimScript, "0"}; }

}  // namespace exactly::dedupe::redis
