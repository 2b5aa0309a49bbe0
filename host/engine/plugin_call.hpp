// Which plugin call each thread is in, and since when: read by the fatal-signal report
// (the crashing thread's own call) and by the stage watchdog (calls that run too long).
#pragma once

#include "engine/stage_cpu.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace exactly::engine {

// What a component tells about itself while one of its calls runs. The strings must
// outlive the call (the component owns them).
struct CallSite {
  const std::string* pipeline;
  const std::string* stage;
  const std::string* crash_label;  // "pipeline 'p', stage 's' (library)"
  StageCpu* cpu = nullptr;         // where the calls' CPU is counted (none: not counted)
};

// Marks the calling thread as inside `fn` of `site` for its lifetime (nests), and counts
// the thread's CPU of the call to site.cpu.
class InPluginCall {
 public:
  InPluginCall(const CallSite& site, const char* fn) noexcept;
  ~InPluginCall() noexcept;
  InPluginCall(const InPluginCall&) = delete;
  InPluginCall& operator=(const InPluginCall&) = delete;

 private:
  const CallSite* prev_site_;
  const char* prev_fn_;
  int64_t prev_since_;
  CallCpu cpu_;
};

// What the next plugin call of this thread works on ("topic-0@1234 and 99 more"), for
// reports; taken by that call.
void set_next_call_origin(std::string origin);

// Async-signal-safe reads of the calling thread's innermost call (nullptr outside one).
const char* current_call_label() noexcept;
const char* current_call_fn() noexcept;
// The records of the innermost call ("topic-0@1234 and 99 more"), or nullptr.
const char* current_call_origin() noexcept;

struct RunningCall {
  std::string pipeline, stage, fn, origin;
  int64_t since_ms = 0;    // steady clock, ms
  int64_t running_ms = 0;  // as of the snapshot
};

// Every plugin call that has been running for at least `min_ms`, longest first.
std::vector<RunningCall> calls_running_longer_than(int64_t min_ms);

// "pipeline 'p', stage 's': process() running for 12.3 s (at topic-0@1234)", one per line.
std::string describe(const std::vector<RunningCall>& calls);

int64_t steady_ms();

}  // namespace exactly::engine
