// CPU priority of the store's background threads (fold, presence-filter build, table
// sizing and fault-in). They do work that may lag the pipeline, so they yield to its
// threads when cores are short: at nice 10, or, for a fold, at SCHED_IDLE.
//
// Why a fold runs at SCHED_IDLE: every partition of a stream reaches its threshold at
// about the same time, so the folds of a cycle came together as 35-48% of a core for
// 8-10 s; at nice 10 they still took a share of the cores from the pipeline and the
// broker on a machine that had none to spare, and the records of those seconds waited
// (at 180k records/s on 2 vCPUs, five alternating pairs: p99 median 1,347 ms with folds
// at nice 10, 765 at SCHED_IDLE, 223 and 321 in the quieter minutes; docs/benchmarks.md).
// A SCHED_IDLE thread runs only on a core that nothing else wants, and any other thread
// that wakes takes the core from it at once.
//
// The risk is starvation: on a machine kept busy by other processes the fold would not
// advance, and the pipeline waits for it once twice the threshold has gathered. So a
// fold is raised back to nice 10 (raise()) as soon as it is late (the next table is
// full before it ended) or waited for. Leaving SCHED_IDLE needs CAP_SYS_NICE or an
// RLIMIT_NICE that allows nice 10; without either, the fold stays at nice 10 from the
// start (it could never be raised).
#pragma once

#include <sched.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>

namespace exactly::dedupe {

inline void nice_background() { (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10); }

// Whether a thread put at SCHED_IDLE may be given SCHED_OTHER at nice 10 again: the
// kernel allows it with an RLIMIT_NICE of 10 or more (nice 10 = limit 20 - 10) or with
// CAP_SYS_NICE in the effective set.
inline bool can_leave_idle() {
  rlimit r{};
  if (getrlimit(RLIMIT_NICE, &r) == 0 && (r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= 10))
    return true;
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return false;
  char line[256];
  unsigned long long caps = 0;
  bool found = false;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::strncmp(line, "CapEff:", 7) == 0) found = std::sscanf(line + 7, "%llx", &caps) == 1;
  std::fclose(f);
  constexpr int kCapSysNice = 23;
  return found && ((caps >> kCapSysNice) & 1) != 0;
}

// One fold thread's priority: lower() on the thread when it starts, leave() before it
// ends; raise() from any thread, any number of times, before, during or after.
class YieldingThread {
 public:
  // At SCHED_IDLE if it can be raised later, else at nice 10. Returns true for idle.
  bool lower() {
    nice_background();  // what a raise returns it to
    // Privileges do not change while the process runs: read them once.
    static const bool can_leave = can_leave_idle();
    std::lock_guard<std::mutex> g(mu_);
    tid_ = gettid();
    if (raised_ || !can_leave) return false;
    sched_param p{};
    idle_ = sched_setscheduler(0, SCHED_IDLE, &p) == 0;
    return idle_;
  }
  // Back to SCHED_OTHER at nice 10 (a no-op for a thread that is not idle or has ended).
  // Returns true the first time it takes a thread out of SCHED_IDLE.
  bool raise() {
    std::lock_guard<std::mutex> g(mu_);
    raised_ = true;
    if (!idle_ || tid_ == 0) return false;
    sched_param p{};
    const bool ok = sched_setscheduler(tid_, SCHED_OTHER, &p) == 0;
    if (ok) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(tid_), 10);
    idle_ = false;
    return ok;
  }
  // The thread ends: a later raise() must not reach another thread that reuses its id.
  void leave() {
    std::lock_guard<std::mutex> g(mu_);
    tid_ = 0;
    idle_ = false;
  }

 private:
  std::mutex mu_;
  pid_t tid_ = 0;
  bool idle_ = false;
  bool raised_ = false;
};

}  // namespace exactly::dedupe
