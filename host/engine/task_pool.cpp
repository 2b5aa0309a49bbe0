#include "engine/task_pool.hpp"

#include "engine/fatal_signal.hpp"

#include <pthread.h>

namespace exactly::engine {

TaskPool::TaskPool(size_t workers, const std::string& name) {
  for (size_t i = 0; i < workers; ++i) {
    workers_.emplace_back([this] { work(); });
    std::string n = (name.size() > 11 ? name.substr(0, 11) : name) + "-t" + std::to_string(i + 1);
    pthread_setname_np(workers_.back().native_handle(), n.substr(0, 15).c_str());
  }
}

TaskPool::~TaskPool() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void TaskPool::run(size_t n, const std::function<void(size_t)>& fn) {
  if (n <= 1 || workers_.empty()) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  uint64_t gen;
  {
    std::lock_guard<std::mutex> g(mu_);
    job_ = &fn;
    job_tasks_ = n;
    pending_ = n - 1;
    gen = ++generation_;
    claim_.store(gen << kIndexBits | 1, std::memory_order_release);
  }
  start_cv_.notify_all();
  fn(0);
  drain(gen, n, fn);
  std::unique_lock<std::mutex> lk(mu_);
  done_cv_.wait(lk, [&] { return pending_ == 0; });
  job_ = nullptr;
}

void TaskPool::drain(uint64_t generation, size_t n, const std::function<void(size_t)>& fn) {
  uint64_t c = claim_.load(std::memory_order_acquire);
  while ((c >> kIndexBits) == generation && (c & kIndexMask) < n) {
    if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel)) continue;
    // Claimed: the job cannot end before this task is counted, so fn stays valid.
    fn(static_cast<size_t>(c & kIndexMask));
    finished_one();
    c = claim_.load(std::memory_order_acquire);
  }
}

void TaskPool::finished_one() {
  std::lock_guard<std::mutex> g(mu_);
  if (--pending_ == 0) done_cv_.notify_all();
}

void TaskPool::work() {
  // A fatal signal in a plugin called from here is reported like one on the pipeline
  // thread (fatal_signal.hpp).
  use_alternate_signal_stack();
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    start_cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    if (job_ == nullptr) continue;  // woken after that job ended
    const auto* fn = job_;
    const size_t n = job_tasks_;
    lk.unlock();
    drain(seen, n, *fn);
    lk.lock();
  }
}

}  // namespace exactly::engine
