#include "engine/plugin_call.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>

namespace exactly::engine {
namespace {

// One per thread that ever called a plugin. The watchdog copies it under `mu`; the
// owning thread takes `mu` only when a call starts or ends (uncontended).
struct Slot {
  std::mutex mu;
  const CallSite* site = nullptr;
  const char* fn = nullptr;
  int64_t since_ms = 0;
  std::string origin;
};

struct Slots {
  std::mutex mu;
  std::set<Slot*> all;
};

Slots& slots() {
  static Slots* s = new Slots;  // never destroyed: threads may end after main returns
  return *s;
}

struct ThreadSlot {
  Slot slot;
  ThreadSlot() {
    std::lock_guard<std::mutex> g(slots().mu);
    slots().all.insert(&slot);
  }
  ~ThreadSlot() {
    std::lock_guard<std::mutex> g(slots().mu);
    slots().all.erase(&slot);
  }
};

// Plain pointers for the signal handler (a thread_local with a constructor is not
// async-signal-safe to touch).
thread_local const char* t_label = nullptr;
thread_local const char* t_fn = nullptr;
thread_local const char* t_origin = nullptr;  // the slot's origin while a call has one
thread_local std::string t_next_origin;

Slot& my_slot() {
  thread_local ThreadSlot ts;
  return ts.slot;
}

}  // namespace

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

InPluginCall::InPluginCall(const CallSite& site, const char* fn) noexcept : cpu_(site.cpu, fn) {
  Slot& s = my_slot();
  std::lock_guard<std::mutex> g(s.mu);
  prev_site_ = s.site;
  prev_fn_ = s.fn;
  prev_since_ = s.since_ms;
  s.site = &site;
  s.fn = fn;
  s.since_ms = steady_ms();
  t_origin = nullptr;  // before the string it points into changes
  s.origin.swap(t_next_origin);
  t_next_origin.clear();
  t_label = site.crash_label->c_str();
  t_fn = fn;
  if (!s.origin.empty()) t_origin = s.origin.c_str();
}

InPluginCall::~InPluginCall() noexcept {
  Slot& s = my_slot();
  std::lock_guard<std::mutex> g(s.mu);
  s.site = prev_site_;
  s.fn = prev_fn_;
  s.since_ms = prev_since_;
  t_origin = nullptr;
  s.origin.clear();
  t_label = prev_site_ ? prev_site_->crash_label->c_str() : nullptr;
  t_fn = prev_fn_;
}

void set_next_call_origin(std::string origin) { t_next_origin = std::move(origin); }

const char* current_call_label() noexcept { return t_label; }
const char* current_call_fn() noexcept { return t_fn; }
const char* current_call_origin() noexcept { return t_origin; }

std::vector<RunningCall> calls_running_longer_than(int64_t min_ms) {
  std::vector<RunningCall> out;
  const int64_t now = steady_ms();
  std::lock_guard<std::mutex> g(slots().mu);
  for (Slot* s : slots().all) {
    std::lock_guard<std::mutex> sg(s->mu);
    if (s->site == nullptr || now - s->since_ms < min_ms) continue;
    out.push_back(RunningCall{*s->site->pipeline, *s->site->stage, s->fn, s->origin, s->since_ms,
                              now - s->since_ms});
  }
  std::sort(out.begin(), out.end(),
            [](const RunningCall& a, const RunningCall& b) { return a.running_ms > b.running_ms; });
  return out;
}

std::string describe(const std::vector<RunningCall>& calls) {
  // A stop that ran out of time between plugin calls (the host's own commit work, or a
  // shutdown.timeout far too short: a bare number is milliseconds) printed nothing here.
  if (calls.empty()) return "(no plugin call in progress: the pipelines were between calls)\n";
  std::string s;
  for (const auto& c : calls)
    if (c.pipeline.empty())  // a library being loaded (plugin/loader.cpp)
      s += fmt::format("plugin library {}: {} running for {:.1f} s\n", c.stage, c.fn,
                       static_cast<double>(c.running_ms) / 1000.0);
    else
      s += fmt::format("pipeline '{}', stage '{}': {}() running for {:.1f} s{}\n", c.pipeline, c.stage,
                       c.fn, static_cast<double>(c.running_ms) / 1000.0,
                       c.origin.empty() ? "" : " (at " + c.origin + ")");
  return s;
}

}  // namespace exactly::engine
