#include "cli/stop_signals.hpp"

#include "engine/plugin_call.hpp"
#include "util/log.hpp"

#include <csignal>
#include <cstdlib>
#include <ctime>

namespace exactly::cli {

StopSignals::StopSignals(int64_t shutdown_timeout_ms) : timeout_ms_(shutdown_timeout_ms) {
  thread_ = std::thread([this] { loop(); });
}

StopSignals::~StopSignals() {
  quit_.store(true);
  thread_.join();
}

void StopSignals::closing() {
  closing_.store(true);
  start_clock();
}

void StopSignals::on_first_signal(std::function<void()> f) {
  std::lock_guard<std::mutex> g(on_first_mu_);
  on_first_ = std::move(f);
  if (requested_.load() && on_first_) on_first_();
}

void StopSignals::on_give_up(std::function<void()> f) {
  std::lock_guard<std::mutex> g(on_first_mu_);
  on_give_up_ = std::move(f);
}

void StopSignals::start_clock() {
  int64_t none = 0;
  deadline_ms_.compare_exchange_strong(none, engine::steady_ms() + timeout_ms_.load());
}

void StopSignals::loop() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  while (!quit_.load()) {
    timespec tick{0, 50 * 1000 * 1000};
    const int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig == SIGINT || sig == SIGTERM) {
      if (requested_.exchange(true)) {
        log::error("host", "second signal: exiting without waiting for {}",
                   closing_.load() ? "the pipelines to close" : "the round to commit");
        std::_Exit(130);
      }
      log::info("host", "signal {}: finishing and committing the running round", sig);
      start_clock();
      std::lock_guard<std::mutex> g(on_first_mu_);
      if (on_first_) on_first_();
    }
    const int64_t deadline = deadline_ms_.load();
    if (deadline != 0 && engine::steady_ms() >= deadline) {
      // Past shutdown.timeout a stop does not wait for a hung plugin: say what is stuck, exit.
      // Before any pipeline started, nothing is uncommitted; without a signal every
      // pipeline had ended before the close began, so only plugins were left to close.
      const char* what = !started_.load()   ? "the first config load did not finish"
                         : requested_.load() ? "the pipelines did not stop"
                                             : "the pipelines ended but did not close";
      const char* then = !started_.load() ? "(no pipeline had started)"
                         : requested_.load()
                             ? "without committing them (their rounds are replayed on the next start)"
                             : "(those still closing had committed all of their input)";
      log::error("host", "{} within shutdown.timeout ({} s); still running:\n{}exiting with code 3 {}", what,
                 timeout_ms_.load() / 1000.0, engine::describe(engine::calls_running_longer_than(0)), then);
      std::function<void()> give_up;
      {
        std::lock_guard<std::mutex> g(on_first_mu_);
        give_up = on_give_up_;
      }
      if (give_up) give_up();
      std::fflush(nullptr);
      std::_Exit(3);
    }
  }
}

}  // namespace exactly::cli
