// The threads a pipeline's tasks run on (`threads:`): run(n, fn) calls fn(0..n-1), task 0
// on the calling (pipeline) thread and the others on workers, and returns when all are
// done. Fork and join per batch: the sink and the commit stay on the pipeline thread.
#pragma once

#include <condition_variable>
#include <cstddef>
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
  void work(size_t index);

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
