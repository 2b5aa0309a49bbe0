// Faults a test can inject into the kafka plugin's rare paths, through the environment:
//
//   EXACTLY_FAULTS="kafka.source.seek=2"   the next 2 seeks of each source fail
//   EXACTLY_FAULTS="kafka.source.seek"     every seek fails
//
// Why: some recovery paths are reachable only by races inside librdkafka (a seek of a
// partition whose fetcher has not started fails with __STATE in 2.0.2, a window of
// microseconds). Without a way to force them, the code that handles them would ship
// untested. Each kafka source reads the variable once, when it is created, so a test can set
// it for one instance; an instance with faults armed says so in its log (warn), and
// names under "kafka." that this plugin does not know are reported the same way (other
// plugins' names are left to them).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace exactly::kafka {

class Faults {
 public:
  // The faults of `known` that EXACTLY_FAULTS arms; entries under "kafka." that are not
  // in `known`, or whose count is not a whole number ≥ 1, go to `unknown` as written.
  static Faults from_env(const std::vector<std::string>& known, std::vector<std::string>& unknown);
  static Faults parse(const std::string& spec, const std::vector<std::string>& known,
                      std::vector<std::string>& unknown);

  // True when the call named `name` is to fail this time (and counts it down).
  bool fire(const std::string& name);
  bool armed() const { return !left_.empty(); }
  // "kafka.source.seek (next 2 calls)", for the log.
  std::string describe() const;

 private:
  static constexpr int64_t kAlways = -1;
  std::map<std::string, int64_t> left_;  // calls still to fail, or kAlways
};

}  // namespace exactly::kafka
