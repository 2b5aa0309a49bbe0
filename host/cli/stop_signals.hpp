#pragma once
// SIGINT and SIGTERM on a thread of their own. The main thread may be inside a plugin call
// that never returns (a validate() while a config loads, a reconfigure() a reload waits
// for), where it reads no signal: a stop must still end the host, the first signal within
// shutdown.timeout (exit 3, naming what is stuck) and a second one at once (exit 130).
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace exactly::cli {

class StopSignals {
 public:
  // SIGINT and SIGTERM must be blocked in every thread before this is built.
  explicit StopSignals(int64_t shutdown_timeout_ms);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // A first stop signal has come.
  bool requested() const { return requested_.load(); }
  // Reloads may change shutdown.timeout; a clock already running keeps its deadline.
  void set_shutdown_timeout(int64_t ms) { timeout_ms_.store(ms); }
  // The pipelines are closing without a signal (all of them ended): the same deadline
  // applies, and a second signal now means "exit without waiting for them to close".
  void closing();
  // The first config load is over and its pipelines are started: until then a stop that
  // gives up has nothing uncommitted to speak of.
  void pipelines_started() { started_.store(true); }
  // Called on this object's thread when the first signal comes (or at once, if it came
  // already): asks the pipelines to stop while the main thread may be elsewhere (in a
  // reload's validate()).
  void on_first_signal(std::function<void()> f);
  // Called on this object's thread when shutdown.timeout is over, just before exit 3:
  // what the run did up to then (the summary), since the normal end will not come.
  void on_give_up(std::function<void()> f);

 private:
  void loop();
  void start_clock();

  std::atomic<bool> requested_{false};
  std::atomic<bool> closing_{false};
  std::atomic<bool> started_{false};
  std::atomic<bool> quit_{false};
  std::atomic<int64_t> timeout_ms_;
  std::atomic<int64_t> deadline_ms_{0};  // steady ms; 0 = no stop under way
  std::mutex on_first_mu_;
  std::function<void()> on_first_;
  std::function<void()> on_give_up_;
  std::thread thread_;
};

}  // namespace exactly::cli
