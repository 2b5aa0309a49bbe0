// The byte stream under one Redis connection: TCP, or TLS over it (OpenSSL). Debian's
// hiredis (0.14) has no TLS, so it is used for the protocol only (formatting commands,
// parsing replies) and this carries the bytes. Blocking, with the connection's timeout
// on connect, on the handshake and on every send and receive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "redis_settings.hpp"

namespace exactly::dedupe::redis {

// The TLS client context of a stage (CA, client certificate), shared by its connections.
// make() throws sdk::ConfigError naming the key whose file cannot be used.
class TlsContext {
 public:
  static std::shared_ptr<TlsContext> make(const RedisTls& tls);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  void* native() const { return ctx_; }  // SSL_CTX*
  const RedisTls& settings() const { return tls_; }

 private:
  TlsContext() = default;
  void* ctx_ = nullptr;
  RedisTls tls_;
};

// Why an I/O call failed: `retry` = a new connection may succeed (refused, reset,
// timeout); otherwise the settings are wrong (`key` names the one to fix).
struct SocketError {
  std::string text;
  bool retry = true;
  std::string key;
};

class Socket {
 public:
  Socket() = default;
  ~Socket();
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // Connects to host:port (a name or an address) and, with `tls`, completes the
  // handshake and checks the server's certificate and name.
  bool open(const RedisEndpoint& at, int64_t timeout_ms, const TlsContext* tls, SocketError& err);
  // Sends all of it.
  bool send_all(const char* data, size_t len, SocketError& err);
  // Receives what is there (at least 1 byte, at most `cap`); 0 with err set on failure.
  size_t receive(char* buf, size_t cap, SocketError& err);
  void close();
  bool is_open() const { return fd_ >= 0; }
  // How long a receive waits (redis.timeout; longer for a command that blocks on the
  // server, as WAIT does for durability.timeout).
  void set_receive_timeout(int64_t timeout_ms);

 private:
  bool handshake(const RedisEndpoint& at, const TlsContext& tls, SocketError& err);
  void hint_client_cert(SocketError& err) const;
  int fd_ = -1;
  void* ssl_ = nullptr;  // SSL*
  bool asked_for_cert_ = false;  // the server asked for a client certificate we lack
  bool answered_ = false;        // the server has sent application data
};

}  // namespace exactly::dedupe::redis
