// A rate class's limit: its token bucket and the pause a downstream set (429 +
// Retry-After). Private to one sink, or shared by every http sink of the host that names
// the same `rate.group`: a pipeline and the one that reads its retry topic send to the
// same API, and with a bucket each they sent up to twice the class's rate (QA: the
// example's main and retry pipelines, each at `rate: 50`). Sinks run on their own
// transfer threads, so the limit is locked; a few thousand requests a second at most.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "token_bucket.hpp"

namespace exactly::http {

class ClassLimit {
 public:
  // Rate and burst as the latest sink to apply its settings set them (they are the
  // group's); false when that changed what another sink of the group had set.
  bool set(double rate, double burst, Clock::time_point now, bool shared);
  double rate() const;
  double tokens(Clock::time_point now);
  Clock::time_point next_token(Clock::time_point now);
  bool try_take(Clock::time_point now);
  // A token taken for a request that then did not go (its fuse had a probe out).
  void give_back();
  Clock::time_point paused_until() const;
  void pause_until(Clock::time_point t);

 private:
  mutable std::mutex mu_;
  TokenBucket bucket_;
  bool set_once_ = false;
  Clock::time_point paused_until_{};
};

// The limit of class `cls` in rate group `group` ("": a new private one). Kept while a
// sink holds it: a group whose sinks are all gone starts afresh.
std::shared_ptr<ClassLimit> class_limit(const std::string& group, const std::string& cls);

}  // namespace exactly::http
