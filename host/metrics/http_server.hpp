#pragma once
// Serves the metrics registry as Prometheus text on GET /metrics (civetweb, from
// Debian). Bound to the address given (default 127.0.0.1 only).
#include <string>

struct mg_context;

namespace exactly::metrics {

class HttpServer {
 public:
  HttpServer() = default;
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  // "127.0.0.1:9464", ":9464" (becomes 127.0.0.1) or "9464". Returns false + why.
  bool start(const std::string& listen, std::string* why);
  void stop();
  int port() const { return port_; }

 private:
  mg_context* ctx_ = nullptr;
  int port_ = 0;
};

}  // namespace exactly::metrics
