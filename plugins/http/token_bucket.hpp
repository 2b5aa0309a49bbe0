// A token bucket: `rate` tokens a second up to `burst`. A rate of 0 means unlimited.
// Time is passed in, so the bucket is plain arithmetic and tests need no clock.
#pragma once

#include <algorithm>
#include <chrono>

namespace exactly::http {

using Clock = std::chrono::steady_clock;

class TokenBucket {
 public:
  TokenBucket() = default;
  TokenBucket(double rate, double burst, Clock::time_point now) { set(rate, burst, now); }

  // Changing the rate keeps the tokens already earned (capped at the new burst), so a
  // live edit neither grants a fresh burst nor takes away what was saved.
  void set(double rate, double burst, Clock::time_point now) {
    refill(now);
    bool first = last_ == Clock::time_point{};
    rate_ = rate;
    burst_ = std::max(1.0, burst);
    tokens_ = first ? burst_ : std::min(tokens_, burst_);
    last_ = now;
  }
  bool unlimited() const { return rate_ <= 0; }
  double rate() const { return rate_; }
  double burst() const { return burst_; }
  double tokens(Clock::time_point now) {
    refill(now);
    return unlimited() ? burst_ : tokens_;
  }
  bool try_take(Clock::time_point now) {
    if (unlimited()) return true;
    refill(now);
    if (tokens_ < 1.0) return false;
    tokens_ -= 1.0;
    return true;
  }
  // A token taken but not used goes back (at most up to the burst).
  void give_back() {
    if (!unlimited()) tokens_ = std::min(burst_, tokens_ + 1.0);
  }
  // When the next token is there (now if one is).
  Clock::time_point next_token(Clock::time_point now) {
    if (unlimited()) return now;
    refill(now);
    if (tokens_ >= 1.0) return now;
    auto wait = std::chrono::duration<double>((1.0 - tokens_) / rate_);
    return now + std::chrono::duration_cast<Clock::duration>(wait) + std::chrono::microseconds(1);
  }

 private:
  void refill(Clock::time_point now) {
    if (last_ == Clock::time_point{} || now <= last_) return;
    if (!unlimited()) {
      double dt = std::chrono::duration<double>(now - last_).count();
      tokens_ = std::min(burst_, tokens_ + dt * rate_);
    }
    last_ = now;
  }

  double rate_ = 0;
  double burst_ = 1;
  double tokens_ = 1;
  Clock::time_point last_{};
};

}  // namespace exactly::http
