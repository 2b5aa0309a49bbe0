// Token bucket for the generator's `rate`: the burst is capped at a tenth of a second's
// worth so a source that was not polled for a while does not flood the next round.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

namespace exactly::generator {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  void set_rate(int64_t per_second) {
    rate_ = per_second;
    cap_ = std::max(1.0, static_cast<double>(per_second) / 10.0);
    tokens_ = std::min(tokens_, cap_);
    last_ = Clock::now();
  }
  bool unlimited() const { return rate_ <= 0; }

  // How many records may go out now, waiting up to timeout_ms for at least one.
  uint64_t take(uint64_t wanted, int timeout_ms) {
    if (unlimited()) return wanted;
    refill();
    if (tokens_ < 1.0 && timeout_ms > 0) {
      double wait_s = (1.0 - tokens_) / static_cast<double>(rate_);
      auto wait = std::min<std::chrono::duration<double>>(
          std::chrono::duration<double>(wait_s), std::chrono::milliseconds(timeout_ms));
      std::this_thread::sleep_for(wait);
      refill();
    }
    auto n = static_cast<uint64_t>(std::min<double>(tokens_, static_cast<double>(wanted)));
    tokens_ -= static_cast<double>(n);
    return n;
  }

 private:
  void refill() {
    auto now = Clock::now();
    double dt = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    tokens_ = std::min(cap_, tokens_ + dt * static_cast<double>(rate_));
  }

  int64_t rate_ = 0;
  double cap_ = 1.0;
  double tokens_ = 0.0;
  Clock::time_point last_ = Clock::now();
};

}  // namespace exactly::generator
