// Thread CPU time spent inside each stage's plugin calls, by call, for the
// stage_cpu_seconds_total metric: which stage a pipeline's CPU goes to, without a profiler.
// Counted in the calling thread's own CPU clock, so a call that waits (a poll for records,
// a commit for the broker) counts only what it computed.
#pragma once

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace exactly::engine {

// The calling thread's CPU time so far, in ns (CLOCK_THREAD_CPUTIME_ID).
int64_t thread_cpu_ns() noexcept;

// CPU the calling thread has spent inside measured plugin calls so far (the outermost
// calls', nested ones included once): the rest of its CPU is the host's own.
int64_t thread_plugin_cpu_ns() noexcept;

// What one component's calls took, since it was last drained. Calls may come from
// several threads (a task's transforms run on the task threads).
class StageCpu {
 public:
  // `fn` is the call's name: a string literal, compared by address.
  void add(const char* fn, int64_t ns) noexcept;
  // Appends the (fn, ns) taken since the last drain and starts again from zero.
  void drain(std::vector<std::pair<const char*, int64_t>>& out);

 private:
  std::mutex mu_;
  std::vector<std::pair<const char*, int64_t>> pending_;
};

// Inside InPluginCall: measures one call on the calling thread. A call made inside another
// one (a stage's call back into the host that reaches another stage) counts for the inner
// stage only; the outer one gets its own share.
class CallCpu {
 public:
  CallCpu(StageCpu* to, const char* fn) noexcept;
  ~CallCpu() noexcept;
  CallCpu(const CallCpu&) = delete;
  CallCpu& operator=(const CallCpu&) = delete;

 private:
  StageCpu* to_;
  const char* fn_;
  int64_t start_ns_ = 0;
  int64_t outer_nested_ns_ = 0;
};

}  // namespace exactly::engine
