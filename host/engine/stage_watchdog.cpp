#include "engine/stage_watchdog.hpp"

#include "engine/plugin_call.hpp"
#include "metrics/registry.hpp"
#include "util/log.hpp"

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <tuple>

namespace exactly::engine {

namespace {
std::atomic<int64_t> g_configured_timeout_ms{0};
}  // namespace

int64_t StageWatchdog::configured_timeout_ms() { return g_configured_timeout_ms.load(std::memory_order_relaxed); }

StageWatchdog::StageWatchdog(int64_t timeout_ms) : timeout_ms_(timeout_ms) {
  g_configured_timeout_ms.store(timeout_ms, std::memory_order_relaxed);
  metrics::global().describe("stage_timeouts_total", metrics::Type::counter,
                             "Plugin calls that ran longer than stage.timeout, by pipeline and stage");
  if (timeout_ms_ > 0) thread_ = std::thread([this] { run(); });
}

StageWatchdog::~StageWatchdog() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StageWatchdog::run() {
  // A call is identified by where it runs and when it started.
  using Key = std::tuple<std::string, std::string, int64_t>;
  std::set<Key> reported;
  std::unique_lock<std::mutex> lk(mu_);
  while (!cv_.wait_for(lk, std::chrono::milliseconds(500), [this] { return stop_; })) {
    auto slow = calls_running_longer_than(timeout_ms_);
    std::set<Key> still;
    for (const auto& c : slow) {
      Key k{c.pipeline, c.stage, c.since_ms};
      still.insert(k);
      if (reported.count(k)) continue;
      if (c.pipeline.empty()) {  // a library being loaded (plugin/loader.cpp)
        log::warn("plugins", "plugin library {}: {} has not returned for {:.1f} s (stage.timeout {:.0f} s): "
                  "the library may hang while it loads; a stop waits for it up to shutdown.timeout",
                  c.stage, c.fn, static_cast<double>(c.running_ms) / 1000.0,
                  static_cast<double>(timeout_ms_) / 1000.0);
        continue;
      }
      log::warn("pipeline:" + c.pipeline,
                "stage '{}': {}() has not returned for {:.1f} s{} (stage.timeout {:.0f} s): the "
                "plugin may be hung; a stop or reload waits for it up to shutdown.timeout",
                c.stage, c.fn, static_cast<double>(c.running_ms) / 1000.0,
                c.origin.empty() ? "" : ", working on " + c.origin,
                static_cast<double>(timeout_ms_) / 1000.0);
      metrics::global().add("stage_timeouts_total", {{"pipeline", c.pipeline}, {"stage", c.stage}}, 1);
    }
    reported.swap(still);
  }
}

}  // namespace exactly::engine
