// The threads a pipeline's tasks run on (`threads:`): run(n, fn) calls fn(0..n-1) and
// returns when all are done. Fork and join per batch: the sink and the commit stay on the
// pipeline thread. Task 0 runs on the calling (pipeline) thread; the others are claimed
// by whichever thread gets to them first, the workers or the caller once its own task is
// done. On a machine whose cores are busy (the broker, librdkafka's threads), a worker
// may be woken late: the caller then runs that task itself instead of waiting for the
// worker to be scheduled (a fixed worker per task made `threads: 2` slower than
// `threads: 1` on 2 cores, docs/benchmarks.md).
//
// Fanning out only pays where another core is free, or where tasks wait on something
// other than a core (a remote call). Where no core is free, the workers' wake-ups and
// the join cost CPU and time, and the tasks take as long as on one thread: on 2 cores
// shared with a broker, fan-outs ran 0.64-0.95 times as fast as one thread would have
// (docs/benchmarks.md, "Tasks that fan out only when it pays"). So the pool measures what
// a fan-out buys: each task's time minus the time its thread waited for a core (what the
// task would have taken on the caller, blocking included), summed, over the join's wall
// time. That is 1 when the tasks ran one after the other or took turns on one core, and
// up to n side by side. When a window of fan-outs bought less than `min_speedup`, the
// next batches run on the caller alone, then a window of fan-outs probes again (the wait
// doubling while probes keep failing). Without the kernel's per-thread scheduler
// statistics (/proc/thread-self/schedstat) nothing is measured and every batch fans out.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace exactly::engine {

class TaskPool {
 public:
  struct Adaptive {
    size_t probe_runs = 16;         // fan-outs measured together
    double min_speedup = 1.3;       // what a window must buy to keep fanning out
    size_t inline_runs = 64;        // on the caller after the first failed window
    size_t max_inline_runs = 2048;  // the wait's ceiling while probes keep failing
  };
  struct Stats {
    uint64_t fanned_out = 0;  // runs whose tasks were offered to the workers
    uint64_t on_caller = 0;   // runs with several tasks that the caller ran alone
    double last_speedup = 0;  // of the last finished probe window (0: none yet)
  };

  // `workers` threads besides the caller's; `name` is shown by top -H (15 chars at most).
  TaskPool(size_t workers, const std::string& name);
  TaskPool(size_t workers, const std::string& name, Adaptive adaptive);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  size_t size() const { return workers_.size() + 1; }
  // fn must not throw; n <= size().
  void run(size_t n, const std::function<void(size_t)>& fn);
  Stats stats() const { return stats_; }  // the caller's thread only

 private:
  void work();
  // Claims and runs tasks of job `generation` until none is left; false once the job
  // is no longer that one.
  void drain(uint64_t generation, size_t n, const std::function<void(size_t)>& fn);
  void finished_one();
  void fan_out(size_t n, const std::function<void(size_t)>& fn);
  void measured(int64_t wall_ns, int64_t alone_ns);
  void run_measured(size_t k, const std::function<void(size_t)>& fn);

  // The job's generation in the high bits, the next unclaimed task in the low ones: a
  // claim is one compare-and-swap that fails once a newer job has begun, so a worker
  // woken late can never run a task of a job that already ended.
  static constexpr unsigned kIndexBits = 16;
  static constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
  std::atomic<uint64_t> claim_{0};
  // The current job's tasks' time less their threads' waits for a core; -1 once a thread
  // could not tell its waits.
  std::atomic<int64_t> alone_ns_{0};

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(size_t)>* job_ = nullptr;
  size_t job_tasks_ = 0;
  uint64_t generation_ = 0;
  size_t pending_ = 0;
  bool stop_ = false;

  // The caller's own (run() is called from one thread).
  const Adaptive adaptive_;
  Stats stats_;
  size_t window_runs_ = 0;
  int64_t window_wall_ns_ = 0, window_alone_ns_ = 0;
  size_t inline_left_ = 0;
  size_t next_inline_ = 0;  // the wait after the next failed window
};

}  // namespace exactly::engine
