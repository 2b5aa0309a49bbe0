// The partitions a source asked this instance to keep warm copies of (ABI 1.2 standby),
// held with owned strings, and when to hand them to the stages next.
#pragma once

#include <exactly/plugin_abi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace exactly::engine {

class StandbySet {
 public:
  using Clock = std::chrono::steady_clock;
  // How often the stages get the (unchanged) set: their chance to catch up.
  static constexpr std::chrono::milliseconds kTick{1000};

  void replace(const ex_partition* parts, size_t n);
  void clear();
  // True when the stages should be called now: the set changed, or a tick passed.
  bool due(Clock::time_point now) const;
  // The set minus the partitions `assigned` says are owned here (by id), as ABI structs pointing into
  // this object; valid until the next replace/clear.
  const std::vector<ex_partition>& without(const std::function<bool(int32_t)>& assigned);
  void called(Clock::time_point now);

 private:
  struct Part {
    int32_t id = 0;
    std::string name, topic;
    int32_t number = 0;
  };
  std::vector<Part> parts_;
  std::vector<ex_partition> abi_;
  bool changed_ = false;
  Clock::time_point last_call_{};
};

}  // namespace exactly::engine
