// Reports plugin calls that do not return: every half second it looks at the calls in
// progress (plugin_call.hpp) and logs, once per call, those running longer than
// stage.timeout, naming pipeline, stage, call and the records it was given; the counter
// exactly_stage_timeouts_total{pipeline,stage} counts them. It cannot stop a call (a
// thread cannot be cancelled safely); shutdown and reload have their own deadline
// (shutdown.timeout) after which the host exits.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace exactly::engine {

class StageWatchdog {
 public:
  explicit StageWatchdog(int64_t timeout_ms);  // 0: does nothing
  ~StageWatchdog();
  // The stage.timeout of the watchdog made last (0: none, or never reported): also how
  // long a sink may hold a record in flight before it is said (pipeline_window.cpp).
  static int64_t configured_timeout_ms();
  StageWatchdog(const StageWatchdog&) = delete;
  StageWatchdog& operator=(const StageWatchdog&) = delete;

 private:
  void run();

  const int64_t timeout_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace exactly::engine
