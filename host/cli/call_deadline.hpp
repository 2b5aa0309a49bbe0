#pragma once
// A plugin call that never returns (a validate(), a library's initializers or descriptor)
// must not hang a command run by CI (`validate`, `plugins`): past the deadline the call
// still running is named and the command fails with exit 2 (a plugin call cannot be
// interrupted, so the process ends).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "engine/plugin_call.hpp"

namespace exactly::cli {

class CallDeadline {
 public:
  // `option`: the command-line option that sets `ms`, named in the error.
  CallDeadline(int64_t ms, std::string option) : option_(std::move(option)), thread_([this, ms] { watch(ms); }) {}
  ~CallDeadline() {
    {
      std::lock_guard<std::mutex> g(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;

 private:
  void watch(int64_t ms) {
    std::unique_lock<std::mutex> lk(mu_);
    if (cv_.wait_for(lk, std::chrono::milliseconds(ms), [this] { return done_; })) return;
    auto calls = engine::calls_running_longer_than(0);
    std::fprintf(stderr, "error: a plugin call did not return within %s (%s):\n%s"
                 "nothing checked past it; exit 2\n",
                 fmt::format("{:g} s", static_cast<double>(ms) / 1000.0).c_str(), option_.c_str(),
                 calls.empty() ? "    (no plugin call is running: the configuration load itself hangs)\n"
                               : engine::describe(calls).c_str());
    std::fflush(nullptr);
    std::_Exit(2);
  }
  const std::string option_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace exactly::cli
