// A per-class fuse (circuit breaker). Closed: requests go. Open: the class's records are
// not sent (the sink hands them to the error policy) until the cool-down ends. Half-open:
// one probe request at a time; its success closes the fuse, its failure opens it again.
// `manual` (open: true in the config) keeps it open whatever happens, for an operator who
// wants a downstream left alone.
#pragma once

#include <chrono>
#include <cstdint>

#include "token_bucket.hpp"

namespace exactly::http {

class Fuse {
 public:
  enum class State { closed = 0, open = 1, half_open = 2 };
  enum class Decision { send, probe, wait, reject };

  // An edit that turns the fuse off (failures 0: "never") or lifts `open: true` closes it
  // at once: left open, it would turn records away with nothing to close it again (each
  // failed probe reopens it) until a restart.
  void configure(bool manual, int failures, std::chrono::milliseconds cooldown) {
    const bool close = failures == 0 || (manual_ && !manual);
    manual_ = manual;
    threshold_ = failures;
    cooldown_ = cooldown;
    if (close && state_ != State::closed) {
      state_ = State::closed;
      consecutive_ = 0;
    }
  }
  State state() const { return manual_ ? State::open : state_; }
  // As the gauge shows it: an open fuse whose cool-down is over is half-open (its next
  // record goes as the probe), not open; with no record coming it stayed "open" (QA).
  State state_at(Clock::time_point now) const {
    if (manual_) return State::open;
    return state_ == State::open && now >= open_until_ ? State::half_open : state_;
  }
  bool manual() const { return manual_; }
  std::chrono::milliseconds cooldown() const { return cooldown_; }

  // True while the class's records are turned away without asking (no side effects).
  bool rejecting(Clock::time_point now) const {
    return manual_ || (state_ == State::open && now < open_until_);
  }
  Decision decide(Clock::time_point now) {
    if (manual_) return Decision::reject;
    switch (state_) {
      case State::closed: return Decision::send;
      case State::open:
        if (now < open_until_) return Decision::reject;
        state_ = State::half_open;
        [[fallthrough]];
      case State::half_open:
        if (probe_in_flight_) return Decision::wait;
        probe_in_flight_ = true;
        return Decision::probe;
    }
    return Decision::send;
  }
  // The downstream answered in a way that shows it is up (2xx, or a 4xx about the request).
  void on_answer() {
    if (state_ != State::closed) ++closes_;
    state_ = State::closed;
    consecutive_ = 0;
    probe_in_flight_ = false;
  }
  // A connection error, a timeout or a 5xx. Returns true when this opened the fuse.
  bool on_failure(Clock::time_point now, bool was_probe) {
    ++consecutive_;
    if (was_probe) probe_in_flight_ = false;
    bool trip = state_ == State::half_open ||
                (state_ == State::closed && threshold_ > 0 && consecutive_ >= threshold_);
    if (!trip) return false;
    state_ = State::open;
    open_until_ = now + cooldown_;
    ++trips_;
    return true;
  }
  Clock::time_point open_until() const { return open_until_; }
  uint64_t trips() const { return trips_; }
  uint64_t closes() const { return closes_; }

 private:
  bool manual_ = false;
  int threshold_ = 0;
  std::chrono::milliseconds cooldown_{10000};
  State state_ = State::closed;
  int consecutive_ = 0;
  bool probe_in_flight_ = false;
  Clock::time_point open_until_{};
  uint64_t trips_ = 0;
  uint64_t closes_ = 0;
};

}  // namespace exactly::http
