// The threads a pipeline's tasks run on (`threads:`): run(n, fn) calls fn(0..n-1) and
// returns when all are done. Fork and join per batch: the sink and the commit stay on the
// pipeline thread. Task 0 runs on the calling (pipeline) thread; the others are claimed
// by whichever thread gets to them first, the workers or the caller once its own task is
// done. On a machine whose cores are busy (the broker, librdkafka's threads), a worker
// may be woken late: the caller then runs that task itself instead of waiting for the
// worker to be scheduled (a fixed worker per task made `threads: 2` slower than
// `threads: 1` on 2 cores, docs/benchmarks.md).
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
  // `workers` threads besides the caller's; `name` is shown by top -H (15 chars at most).
  TaskPool(size_t workers, const std::string& name);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  size_t size() const { return workers_.size() + 1; }
  // fn must not throw; n <= size().
  void run(size_t n, const std::function<void(size_t)>& fn);

 private:
  void work();
  // Claims and runs tasks of job `generation` until none is left; false once the job
  // is no longer that one.
  void drain(uint64_t generation, size_t n, const std::function<void(size_t)>& fn);
  void finished_one();

  // The job's generation in the high bits, the next unclaimed task in the low ones: a
  // claim is one compare-and-swap that fails once a newer job has begun, so a worker
  // woken late can never run a task of a job that already ended.
  static constexpr unsigned kIndexBits = 16;
  static constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
  std::atomic<uint64_t> claim_{0};

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(size_t)>* job_ = nullptr;
  size_t job_tasks_ = 0;
  uint64_t generation_ = 0;
  size_t pending_ = 0;
  bool stop_ = false;
};

}  // namespace exactly::engine
