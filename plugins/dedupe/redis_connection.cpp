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

Connection::Connection(RedisEndpoint endpoint, int64_t timeout_ms, RedisAuth auth)
    : endpoint_(std::move(endpoint)), timeout_ms_(timeout_ms), auth_(std::move(auth)) {}

Connection::~Connection() { drop(); }

void Connection::drop() {
  if (ctx_) redisFree(ctx_);
  ctx_ = nullptr;
}

Status Connection::io_failure(std::string_view what) {
  std::string why = ctx_ && ctx_->errstr[0] ? ctx_->errstr : "connection lost";
  // hiredis reports its socket timeout as the read's EAGAIN: say what it means.
  if (why == "Resource temporarily unavailable")
    why = "no answer within redis.timeout (" + std::to_string(timeout_ms_) + " ms)";
  std::string m = "dedupe-redis: " + endpoint_.text() + ": " + std::string(what) + ": " + why;
  drop();
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
  return Status::fatal(m);
}

Status Connection::ensure() {
  if (ctx_ != nullptr) return Status::ok();
  timeval tv{static_cast<time_t>(timeout_ms_ / 1000),
             static_cast<suseconds_t>((timeout_ms_ % 1000) * 1000)};
  ctx_ = redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, tv);
  if (ctx_ == nullptr) return Status::retriable("dedupe-redis: " + endpoint_.text() + ": out of memory");
  if (ctx_->err) return io_failure("cannot connect");
  if (redisSetTimeout(ctx_, tv) != REDIS_OK) return io_failure("cannot set the timeout");
  redisEnableKeepAlive(ctx_);
  Reply r;
  Status st;
  if (!auth_.password.empty()) {
    st = auth_.username.empty() ? call({"AUTH", auth_.password}, r)
                                : call({"AUTH", auth_.username, auth_.password}, r);
    if (!st) {
      drop();
      return st;
    }
  }
  st = call({"SCRIPT", "LOAD", kClaimScript}, r);
  if (!st) return st;
  if (r->type != REDIS_REPLY_STRING) {
    drop();
    return Status::fatal("dedupe-redis: " + endpoint_.text() + ": SCRIPT LOAD answered no SHA1");
  }
  sha_.assign(r->str, r->len);
  // An evicting server forgets claims without an error: refuse it. A server that does
  // not allow CONFIG (some managed services) is taken on trust.
  void* raw = redisCommand(ctx_, "CONFIG GET maxmemory-policy");
  if (raw == nullptr) return io_failure("CONFIG GET failed");
  Reply policy(static_cast<redisReply*>(raw));
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
  if (redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), ptrs.data(), lens.data()) != REDIS_OK)
    return io_failure("cannot queue a command");
  return Status::ok();
}

Status Connection::flush() {
  if (ctx_ == nullptr) return Status::retriable("dedupe-redis: " + endpoint_.text() + ": not connected");
  int done = 0;
  while (!done)
    if (redisBufferWrite(ctx_, &done) != REDIS_OK) return io_failure("send failed");
  return Status::ok();
}

Status Connection::read(Reply& out) {
  if (ctx_ == nullptr) return Status::retriable("dedupe-redis: " + endpoint_.text() + ": not connected");
  void* r = nullptr;
  if (redisGetReply(ctx_, &r) != REDIS_OK || r == nullptr) return io_failure("no reply");
  out = Reply(static_cast<redisReply*>(r));
  return Status::ok();
}

Status Connection::call(const std::vector<std::string_view>& argv, Reply& out) {
  if (ctx_ == nullptr) {
    Status st = ensure();
    if (!st) return st;
  }
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (auto a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  void* r = redisCommandArgv(ctx_, static_cast<int>(argv.size()), ptrs.data(), lens.data());
  if (r == nullptr) return io_failure(std::string(argv[0]) + " failed");
  out = Reply(static_cast<redisReply*>(r));
  if (out->type == REDIS_REPLY_ERROR) {
    Status st = reply_error(argv[0], out.get());
    if (st.code() == EX_ERR_RETRIABLE) drop();  // e.g. LOADING: reconnect and reload later
    return st;
  }
  return Status::ok();
}

std::vector<std::string_view> Connection::evalsha_head() const { return {"EVALSHA", sha_, "0"}; }
std::vector<std::string_view> Connection::eval_head() { return {"EVAL", kClaimScript, "0"}; }

}  // namespace exactly::dedupe::redis
