#include "redis_socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <exactly/sdk.hpp>

namespace exactly::dedupe::redis {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

// OpenSSL's queued errors, oldest first, as one line (and the queue emptied).
std::string ssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

bool readable_file(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

void set_timeouts(int fd, int64_t timeout_ms) {
  timeval tv{static_cast<time_t>(timeout_ms / 1000), static_cast<suseconds_t>((timeout_ms % 1000) * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// What hiredis did for its connections: no Nagle delay on pipelined commands, and
// keepalive so that a peer gone without a FIN is noticed (15 s, as hiredis).
void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  int idle = 15, intvl = 5, cnt = 3;
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

// One address, non-blocking connect bounded by the deadline; the fd is blocking after.
int connect_one(const addrinfo* ai, std::chrono::steady_clock::time_point deadline, int& error) {
  int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
  if (fd < 0) {
    error = errno;
    return -1;
  }
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      error = errno;
      ::close(fd);
      return -1;
    }
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLOUT, 0};
      int n = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = n == 0 ? ETIMEDOUT : errno;
        ::close(fd);
        return -1;
      }
      break;
    }
    int so = 0;
    socklen_t len = sizeof so;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &len) != 0 || so != 0) {
      error = so != 0 ? so : errno;
      ::close(fd);
      return -1;
    }
  }
  int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

// OpenSSL writes with write(2), which raises SIGPIPE when the server has gone; a host
// that does not ignore the signal would die of it. It is blocked for this thread while
// OpenSSL runs, and one raised meanwhile is taken back (the write fails with EPIPE).
class NoSigpipe {
 public:
  NoSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~NoSigpipe() {
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        timespec zero{0, 0};
        sigtimedwait(&pipe_, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  NoSigpipe(const NoSigpipe&) = delete;
  NoSigpipe& operator=(const NoSigpipe&) = delete;

 private:
  sigset_t pipe_{}, old_{};
  bool was_pending_ = false;
};

bool is_ip_literal(const std::string& host) {
  in6_addr a6;
  in_addr a4;
  return inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

// Called by OpenSSL when a server asks for a client certificate and none is set: the
// connection goes on without one (a server with tls-auth-clients optional takes it),
// and a failure before its first answer says what is likely missing.
int no_client_cert(SSL* ssl, X509**, EVP_PKEY**) {
  if (auto* asked = static_cast<bool*>(SSL_get_app_data(ssl))) *asked = true;
  return 0;
}

}  // namespace

std::shared_ptr<TlsContext> TlsContext::make(const RedisTls& tls) {
  std::shared_ptr<TlsContext> out(new TlsContext());
  out->tls_ = tls;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) throw sdk::ConfigError("tls", "cannot make a TLS context: " + ssl_errors());
  out->ctx_ = ctx;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  // Retries of a read or write after a timeout must not fail on a moved buffer.
  SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_AUTO_RETRY);
  if (!tls.ca_file.empty()) {
    if (!readable_file(tls.ca_file))
      throw sdk::ConfigError("tls.ca.file", "cannot read " + tls.ca_file);
    if (SSL_CTX_load_verify_locations(ctx, tls.ca_file.c_str(), nullptr) != 1)
      throw sdk::ConfigError("tls.ca.file", tls.ca_file + " holds no usable CA certificate (PEM): " +
                                                ssl_errors());
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    throw sdk::ConfigError("tls.ca.file", "the system's CA certificates cannot be loaded (" +
                                              ssl_errors() + "): name the CA file");
  }
  if (!tls.cert_file.empty()) {
    if (!readable_file(tls.cert_file))
      throw sdk::ConfigError("tls.cert.file", "cannot read " + tls.cert_file);
    if (!readable_file(tls.key_file))
      throw sdk::ConfigError("tls.key.file", "cannot read " + tls.key_file);
    if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert_file.c_str()) != 1)
      throw sdk::ConfigError("tls.cert.file", tls.cert_file + " holds no usable certificate (PEM): " +
                                                  ssl_errors());
    if (SSL_CTX_use_PrivateKey_file(ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
      throw sdk::ConfigError("tls.key.file", tls.key_file + " holds no usable private key (PEM, "
                                             "unencrypted): " + ssl_errors());
    if (SSL_CTX_check_private_key(ctx) != 1)
      throw sdk::ConfigError("tls.key.file", tls.key_file + " is not the key of " + tls.cert_file);
  } else {
    SSL_CTX_set_client_cert_cb(ctx, no_client_cert);
  }
  return out;
}

TlsContext::~TlsContext() {
  if (ctx_ != nullptr) SSL_CTX_free(static_cast<SSL_CTX*>(ctx_));
}

Socket::~Socket() { close(); }

void Socket::close() {
  if (ssl_ != nullptr) {
    // No close_notify: the server may be gone, and a blocking shutdown would wait.
    SSL_free(static_cast<SSL*>(ssl_));
    ssl_ = nullptr;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::set_receive_timeout(int64_t timeout_ms) {
  if (fd_ < 0) return;
  timeval tv{static_cast<time_t>(timeout_ms / 1000), static_cast<suseconds_t>((timeout_ms % 1000) * 1000)};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

bool Socket::open(const RedisEndpoint& at, int64_t timeout_ms, const TlsContext* tls, SocketError& err) {
  close();
  asked_for_cert_ = false;
  answered_ = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const std::string port = std::to_string(at.port);
  if (int rc = getaddrinfo(at.host.c_str(), port.c_str(), &hints, &list); rc != 0) {
    err = {std::string("cannot resolve ") + at.host + ": " + gai_strerror(rc), true, ""};
    return false;
  }
  int error = 0;
  for (const addrinfo* ai = list; ai != nullptr && fd_ < 0; ai = ai->ai_next)
    fd_ = connect_one(ai, deadline, error);
  freeaddrinfo(list);
  if (fd_ < 0) {
    err = {error == ETIMEDOUT ? "no connection within redis.timeout (" + std::to_string(timeout_ms) + " ms)"
                              : errno_text(error),
           true, ""};
    return false;
  }
  tune(fd_);
  set_timeouts(fd_, timeout_ms);
  if (tls != nullptr && !handshake(at, *tls, err)) {
    close();
    return false;
  }
  return true;
}

bool Socket::handshake(const RedisEndpoint& at, const TlsContext& tls, SocketError& err) {
  ERR_clear_error();
  SSL* ssl = SSL_new(static_cast<SSL_CTX*>(tls.native()));
  if (ssl == nullptr) {
    err = {"cannot start TLS: " + ssl_errors(), true, ""};
    return false;
  }
  ssl_ = ssl;
  SSL_set_fd(ssl, fd_);
  SSL_set_app_data(ssl, &asked_for_cert_);
  const std::string& name = tls.settings().server_name.empty() ? at.host : tls.settings().server_name;
  // The certificate must name the server: an address as an IP SAN, a name as a DNS one
  // (and a name is also sent as SNI, for servers behind one TLS front).
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (is_ip_literal(name)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl, name.c_str());
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    SSL_set1_host(ssl, name.c_str());
  }
  NoSigpipe guard;
  if (SSL_connect(ssl) == 1) return true;
  const long verify = SSL_get_verify_result(ssl);
  const int saved_errno = errno;
  std::string why = ssl_errors();
  if (verify != X509_V_OK) {
    // Not cured by waiting: the CA or the name is wrong (or the server's certificate
    // expired). Stop and name the setting.
    std::string key = verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH
                          ? "tls.server.name"
                          : "tls.ca.file";
    err = {"the server's certificate is not trusted for " + name + ": " +
               X509_verify_cert_error_string(verify),
           false, key};
    return false;
  }
  if (why.find("wrong version number") != std::string::npos ||
      why.find("packet length too long") != std::string::npos ||
      why.find("record layer failure") != std::string::npos) {
    err = {"the server does not speak TLS on this port (" + why + ")", false, "tls"};
    return false;
  }
  if (why.empty())
    why = saved_errno == EAGAIN || saved_errno == EWOULDBLOCK
              ? "no answer within redis.timeout (a server without TLS on this port does not "
                "answer a TLS handshake: is tls: true right here?)"
          : saved_errno != 0 ? errno_text(saved_errno)
                             : "connection closed";
  err = {"TLS handshake failed: " + why, true, ""};
  return false;
}

bool Socket::send_all(const char* data, size_t len, SocketError& err) {
  while (len > 0) {
    ssize_t n;
    if (ssl_ != nullptr) {
      NoSigpipe guard;
      ERR_clear_error();
      int r = SSL_write(static_cast<SSL*>(ssl_), data, static_cast<int>(len));
      if (r <= 0) {
        const int saved_errno = errno;
        std::string why = ssl_errors();
        err = {why.empty() ? (saved_errno ? errno_text(saved_errno) : "connection closed") : why, true, ""};
        hint_client_cert(err);
        return false;
      }
      n = r;
    } else {
      n = ::send(fd_, data, len, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        err = {errno == EAGAIN || errno == EWOULDBLOCK ? "send timed out" : errno_text(errno), true, ""};
        return false;
      }
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

size_t Socket::receive(char* buf, size_t cap, SocketError& err) {
  for (;;) {
    if (ssl_ != nullptr) {
      NoSigpipe guard;  // a read may write too (a TLS 1.3 key update)
      ERR_clear_error();
      int r = SSL_read(static_cast<SSL*>(ssl_), buf, static_cast<int>(cap));
      if (r > 0) {
        answered_ = true;
        return static_cast<size_t>(r);
      }
      const int saved_errno = errno;
      const int code = SSL_get_error(static_cast<SSL*>(ssl_), r);
      std::string why = ssl_errors();
      if (code == SSL_ERROR_ZERO_RETURN) why = "connection closed by the server";
      else if (why.empty())
        why = saved_errno == EAGAIN || saved_errno == EWOULDBLOCK ? "Resource temporarily unavailable"
              : saved_errno != 0                                  ? errno_text(saved_errno)
                                                                  : "connection closed by the server";
      // TLS 1.3 finishes the handshake before the server has looked at the client's
      // certificate: a refusal arrives here, on the first read.
      if (why.find("certificate required") != std::string::npos)
        err = {"the server wants a client certificate (" + why + ")", false, "tls.cert.file"};
      else
        err = {why, true, ""};
      hint_client_cert(err);
      return 0;
    }
    ssize_t n = ::recv(fd_, buf, cap, 0);
    if (n > 0) return static_cast<size_t>(n);
    if (n < 0 && errno == EINTR) continue;
    err = {n == 0 ? "connection closed by the server" : errno_text(errno), true, ""};
    return 0;
  }
}

void Socket::hint_client_cert(SocketError& err) const {
  // Kept retriable: a server that takes connections without a certificate
  // (tls-auth-clients optional) may have failed for another reason.
  if (err.retry && asked_for_cert_ && !answered_)
    err.text += " (the server asked for a client certificate and none is set: tls.cert.file and "
                "tls.key.file, if it requires one)";
}

}  // namespace exactly::dedupe::redis
