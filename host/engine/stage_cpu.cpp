#include "engine/stage_cpu.hpp"

#include <time.h>

namespace exactly::engine {
namespace {
// CPU of the measured calls nested in the current one (subtracted from its own share).
thread_local int64_t t_nested_ns = 0;
thread_local int t_depth = 0;
thread_local int64_t t_plugin_ns = 0;
}  // namespace

int64_t thread_cpu_ns() noexcept {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t thread_plugin_cpu_ns() noexcept { return t_plugin_ns; }

void StageCpu::add(const char* fn, int64_t ns) noexcept {
  if (ns <= 0) return;
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [f, v] : pending_)
    if (f == fn) {
      v += ns;
      return;
    }
  try {
    pending_.emplace_back(fn, ns);
  } catch (...) {
    // Out of memory for a metric's slot: the share is not counted, the call goes on.
  }
}

void StageCpu::drain(std::vector<std::pair<const char*, int64_t>>& out) {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [f, v] : pending_)
    if (v > 0) {
      out.emplace_back(f, v);
      v = 0;
    }
}

CallCpu::CallCpu(StageCpu* to, const char* fn) noexcept : to_(to), fn_(fn) {
  if (to_ == nullptr) return;
  outer_nested_ns_ = t_nested_ns;
  t_nested_ns = 0;
  ++t_depth;
  start_ns_ = thread_cpu_ns();
}

CallCpu::~CallCpu() noexcept {
  if (to_ == nullptr) return;
  const int64_t total = thread_cpu_ns() - start_ns_;
  to_->add(fn_, total - t_nested_ns);
  t_nested_ns = outer_nested_ns_ + total;
  if (--t_depth == 0) t_plugin_ns += total;
}

}  // namespace exactly::engine
