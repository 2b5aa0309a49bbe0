#include "metrics/http_server.hpp"

#include "metrics/registry.hpp"
#include "util/log.hpp"

#include <civetweb.h>

#include <cstring>
#include <string>

namespace exactly::metrics {
namespace {

int handle_metrics(mg_connection* conn, void*) {
  std::string body = global().exposition();
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "Content-Length: %zu\r\nConnection: close\r\n\r\n",
            body.size());
  mg_write(conn, body.data(), body.size());
  return 200;
}

int handle_other(mg_connection* conn, void*) {
  const char* msg = "exactly: metrics are at /metrics\n";
  mg_printf(conn,
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
            "Connection: close\r\n\r\n%s",
            std::strlen(msg), msg);
  return 404;
}

// civetweb says why a start failed only through its log callback (mg_start2's error text
// is a summary, "Failed to setup server ports"): while start() runs, that reason is kept
// for the error; later messages (a worker's trouble) go to the host's log.
thread_local std::string* starting = nullptr;

int log_message(const mg_connection*, const char* message) {
  if (message == nullptr) return 1;
  if (starting != nullptr) {
    if (!starting->empty()) *starting += "; ";
    *starting += message;
  } else {
    log::warn("metrics", "{}", message);
  }
  return 1;  // handled: civetweb writes nothing to stderr itself
}

}  // namespace

HttpServer::~HttpServer() { stop(); }

bool HttpServer::start(const std::string& listen, std::string* why) {
  std::string addr = listen;
  if (addr.find(':') == std::string::npos) addr = "127.0.0.1:" + addr;
  if (addr[0] == ':') addr = "127.0.0.1" + addr;
  static bool inited = (mg_init_library(0), true);
  (void)inited;
  const char* options[] = {"listening_ports", addr.c_str(), "num_threads", "2", nullptr};
  mg_callbacks cb{};
  cb.log_message = log_message;
  mg_init_data init{};
  init.callbacks = &cb;
  init.configuration_options = options;
  // The reason an operator needs ("cannot bind to ...: 98 (Address already in use)") comes
  // through log_message; the error text is civetweb's summary, used only without it.
  char text[256] = {0};
  unsigned code = 0;
  mg_error_data error{&code, text, sizeof(text)};
  std::string reason;
  starting = &reason;
  ctx_ = mg_start2(&init, &error);
  starting = nullptr;
  if (ctx_ == nullptr) {
    if (reason.empty()) reason = text;
    *why = "cannot listen on " + addr + (reason.empty() ? std::string() : ": " + reason);
    return false;
  }
  mg_set_request_handler(ctx_, "/metrics", handle_metrics, nullptr);
  mg_set_request_handler(ctx_, "/", handle_other, nullptr);
  mg_server_port ports[1];
  if (mg_get_server_ports(ctx_, 1, ports) > 0) port_ = ports[0].port;
  return true;
}

void HttpServer::stop() {
  if (ctx_) mg_stop(ctx_);
  ctx_ = nullptr;
}

}  // namespace exactly::metrics
