// The sink's rate classes: per class a limit (token bucket and the pause a downstream
// set with 429 Retry-After; class_limit.hpp, shared within a rate.group), a fuse and
// counters. Rebuilt from new settings in place: buckets
// and fuses of classes that stay keep their state, so a live rate edit neither resets a
// tripped fuse nor hands out a fresh burst.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "class_limit.hpp"
#include "fuse.hpp"
#include "http_settings.hpp"

namespace exactly::http {

struct RateClass {
  std::string name;
  std::string labels;  // "class=<name>" for metrics
  std::shared_ptr<ClassLimit> limit;
  Fuse fuse;
  bool reroute_limited = false, reroute_fused = false;  // when.limited / when.fused: reroute
  // The fuse's opens and closes already logged.
  uint64_t trips_logged = 0, closes_logged = 0;
  // Counters since the last metrics flush.
  uint64_t requests = 0, ok = 0, retries = 0, failures = 0, fuse_rejects = 0;
  // Records re-enqueued to the retry topic, by why (requeue.cpp).
  uint64_t requeued_failed = 0, requeued_limited = 0, requeued_fused = 0;
};

class RateClasses {
 public:
  // Returns a line for each class whose rate or burst replaced another sink's setting in
  // the same rate group (for the log).
  std::vector<std::string> apply(const std::map<std::string, ClassSettings>& settings,
                                 const std::string& rate_group, Clock::time_point now);
  // Index of the class named `name`, else of "default".
  size_t find(std::string_view name) const;
  size_t default_index() const { return default_; }
  size_t size() const { return classes_.size(); }
  RateClass& operator[](size_t i) { return classes_[i]; }

 private:
  std::vector<RateClass> classes_;
  std::map<std::string, size_t, std::less<>> by_name_;
  size_t default_ = 0;
};

}  // namespace exactly::http
