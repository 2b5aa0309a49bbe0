// One Redis server of a layout: hiredis formats the commands and parses the replies,
// redis_socket.hpp carries them (TCP or TLS; synchronous, with timeouts). A broken
// connection is dropped and made again on the next call; every failure that a retry
// can cure (refused, reset, timeout, LOADING, failover) is a retriable Status, so the
// pipeline aborts the round and replays it instead of dying.
#pragma once

#include <exactly/sdk.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redis_settings.hpp"
#include "redis_socket.hpp"

struct redisReader;
struct redisReply;

namespace exactly::dedupe::redis {

// A reply, freed on destruction.
class Reply {
 public:
  Reply() = default;
  explicit Reply(redisReply* r) : r_(r) {}
  Reply(Reply&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Reply& operator=(Reply&& o) noexcept;
  ~Reply();
  redisReply* get() const { return r_; }
  redisReply* operator->() const { return r_; }

 private:
  redisReply* r_ = nullptr;
};

class Connection {
 public:
  // `tls`: null for plain TCP.
  Connection(RedisEndpoint endpoint, int64_t timeout_ms, RedisAuth auth = {},
             std::shared_ptr<const TlsContext> tls = nullptr);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const RedisEndpoint& endpoint() const { return endpoint_; }
  // Connects (and loads the claim script) if not connected.
  sdk::Status ensure();
  // Pipelining: queue a command, send everything queued, then read replies in order.
  sdk::Status append(const std::vector<std::string_view>& argv);
  sdk::Status flush();
  sdk::Status read(Reply& out);
  // read() of the reply to a command that blocks on the server for up to blocks_ms (WAIT):
  // the receive waits that much longer than redis.timeout.
  sdk::Status read_blocking(Reply& out, int64_t blocks_ms);
  // One command, waited for. An error reply is a Status (classified).
  sdk::Status call(const std::vector<std::string_view>& argv, Reply& out);
  // EVALSHA of the claim script; queued by the caller with append(). After a NOSCRIPT
  // (server restarted without the script) the caller retries with eval_args().
  std::vector<std::string_view> evalsha_head() const;
  static std::vector<std::string_view> eval_head();
  // A server error reply as a Status: retriable when waiting can cure it.
  sdk::Status reply_error(std::string_view what, const redisReply* r) const;
  void drop();
  bool connected() const { return socket_.is_open(); }
  // Changes with every new connection: a WAIT covers only writes of its own connection.
  uint64_t generation() const { return generation_; }

 private:
  sdk::Status io_failure(std::string_view what, const SocketError& err);
  // Parses the next reply from what was received, receiving more as needed.
  sdk::Status next_reply(Reply& out, std::string_view what);
  std::string plaintext_hint() const;

  RedisEndpoint endpoint_;
  int64_t timeout_ms_;
  RedisAuth auth_;
  std::shared_ptr<const TlsContext> tls_;
  Socket socket_;
  redisReader* reader_ = nullptr;  // null while not connected
  std::string pending_;            // commands queued by append(), sent by flush()
  bool awaiting_first_reply_ = false;  // connected, and nothing answered yet
  std::string sha_;
  uint64_t generation_ = 0;
};

bool is_noscript(const redisReply* r);

}  // namespace exactly::dedupe::redis
