#include "metrics/http_server.hpp"

#include "metrics/registry.hpp"
#include "util/log.hpp"

#include <civetweb.h>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <map>
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

void reply(mg_connection* conn, int code, const char* status, const std::string& body) {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
            "Connection: close\r\n\r\n",
            code, status, body.size());
  mg_write(conn, body.data(), body.size());
}

// Liveness: the host answers (a hung plugin call does not stop this thread; the stage
// watchdog and shutdown.timeout deal with those).
int handle_healthz(mg_connection* conn, void*) {
  reply(conn, 200, "OK", "ok\n");
  return 200;
}

// Readiness: every pipeline of the host is up (exactly_pipeline_up), its last round
// committed (exactly_pipeline_aborts_in_a_row 0) and no commit of it has run past
// exactly_pipeline_commit_ready_seconds (one held by a broker outage has not failed yet,
// and said ready for its 10-30 s), or it has finished its bounded input
// (exactly_pipeline_finished: done, not down), one per line. Not ready (503) while one
// starts, retries its open, has failed, aborts its rounds (a sink that cannot commit: the
// pipeline is up and moves nothing), is held in a commit, or there is none: a load
// balancer's or an orchestrator's readiness probe, not a restart trigger (a pipeline
// that failed on its configuration stays failed until the file is fixed).
int handle_readyz(mg_connection* conn, void*) {
  std::string body;
  bool ready = true;
  const auto up = global().series_of("pipeline_up");
  auto by_pipeline = [](const char* name) {
    std::map<std::string, double> m;
    for (const auto& s : global().series_of(name)) m[Registry::label_value(s.labels, "pipeline")] = s.value;
    return m;
  };
  const auto aborted = by_pipeline("pipeline_aborts_in_a_row");
  const auto finished = by_pipeline("pipeline_finished");
  const auto started = by_pipeline("pipeline_commit_started_timestamp_seconds");
  const auto limit = by_pipeline("pipeline_commit_ready_seconds");
  auto get = [](const std::map<std::string, double>& m, const std::string& k) {
    const auto it = m.find(k);
    return it == m.end() ? 0.0 : it->second;
  };
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (const auto& s : up) {
    const std::string name = Registry::label_value(s.labels, "pipeline");
    const bool on = s.value >= 1;
    const bool done = !on && get(finished, name) >= 1;
    const double aborts = get(aborted, name);
    const double commit_s = get(started, name) > 0 ? now - get(started, name) : 0.0;
    const bool held = on && get(limit, name) > 0 && commit_s > get(limit, name);
    ready = ready && (on || done) && aborts == 0 && !held;
    body += "pipeline " + name + (on ? ": up" : done ? ": finished" : ": down");
    if (aborts > 0) body += fmt::format(", its last {} round(s) aborted", static_cast<int64_t>(aborts));
    if (held)
      body += fmt::format(", its commit has run {:.0f} s (more than ready.commit.timeout, {:g} s)",
                          commit_s, get(limit, name));
    body += "\n";
  }
  if (up.empty()) {
    ready = false;
    body = "no pipeline\n";
  }
  body = (ready ? "ready\n" : "not ready\n") + body;
  reply(conn, ready ? 200 : 503, ready ? "OK" : "Service Unavailable", body);
  return ready ? 200 : 503;
}

int handle_other(mg_connection* conn, void*) {
  const char* msg = "exactly: metrics are at /metrics, liveness at /healthz, readiness at /readyz\n";
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
  mg_set_request_handler(ctx_, "/healthz", handle_healthz, nullptr);
  mg_set_request_handler(ctx_, "/readyz", handle_readyz, nullptr);
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
