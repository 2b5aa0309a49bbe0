// librdkafka repeats some log lines dozens of times a second while a broker is away (QA:
// "Failed to acquire transactional PID ...: Coordinator not available: retrying", 1,826
// lines a minute). A line already logged within the window is counted instead of logged,
// and the count goes with its next appearance after the window.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace exactly::kafka {

class RepeatFilter {
 public:
  explicit RepeatFilter(int64_t window_ms) : window_ms_(window_ms) {}
  int64_t window_ms() const { return window_ms_; }
  // Whether to log `line` at `now_ms`; `suppressed` gets how many copies were held back
  // since it was last logged.
  bool pass(const std::string& line, int64_t now_ms, uint64_t& suppressed);

 private:
  struct Seen {
    int64_t logged_ms = 0;
    uint64_t suppressed = 0;
  };
  int64_t window_ms_;
  std::map<std::string, Seen> seen_;
};

}  // namespace exactly::kafka
