#include "engine/task_pool.hpp"

#include "engine/fatal_signal.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace exactly::engine {

namespace {

// The time this thread has waited for a core since it started (the second field of its
// schedstat), or -1 if the kernel does not tell. The file stays open for the thread's life.
int64_t core_wait_ns() {
  struct Stat {
    int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    ~Stat() {
      if (fd >= 0) ::close(fd);
    }
  };
  thread_local Stat st;
  if (st.fd < 0) return -1;
  char buf[96];
  const ssize_t n = ::pread(st.fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char* end = nullptr;
  std::strtoull(buf, &end, 10);  // time on a core
  if (end == buf) return -1;
  const char* wait = end;
  const unsigned long long w = std::strtoull(wait, &end, 10);
  return end == wait ? -1 : static_cast<int64_t>(w);
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TaskPool::TaskPool(size_t workers, const std::string& name) : TaskPool(workers, name, Adaptive{}) {}

TaskPool::TaskPool(size_t workers, const std::string& name, Adaptive adaptive)
    : adaptive_(adaptive), next_inline_(adaptive.inline_runs) {
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
  if (n <= 1 || workers_.empty() || inline_left_ > 0) {
    if (n > 1 && !workers_.empty()) {
      --inline_left_;
      ++stats_.on_caller;
    }
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  ++stats_.fanned_out;
  const int64_t t0 = now_ns();
  alone_ns_.store(0, std::memory_order_relaxed);
  fan_out(n, fn);
  const int64_t alone = alone_ns_.load(std::memory_order_relaxed);
  if (alone >= 0) measured(now_ns() - t0, alone);
}

void TaskPool::run_measured(size_t k, const std::function<void(size_t)>& fn) {
  const int64_t w0 = core_wait_ns(), t0 = now_ns();
  fn(k);
  const int64_t t1 = now_ns(), w1 = core_wait_ns();
  if (w0 < 0 || w1 < 0) {
    alone_ns_.store(-1, std::memory_order_relaxed);
    return;
  }
  // Fetch-add unless some thread could not measure (-1 sticks).
  int64_t cur = alone_ns_.load(std::memory_order_relaxed);
  const int64_t add = std::max<int64_t>(0, (t1 - t0) - (w1 - w0));
  while (cur >= 0 && !alone_ns_.compare_exchange_weak(cur, cur + add, std::memory_order_relaxed)) {
  }
}

void TaskPool::fan_out(size_t n, const std::function<void(size_t)>& fn) {
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
  run_measured(0, fn);
  drain(gen, n, fn);
  std::unique_lock<std::mutex> lk(mu_);
  done_cv_.wait(lk, [&] { return pending_ == 0; });
  job_ = nullptr;
}

void TaskPool::measured(int64_t wall_ns, int64_t alone_ns) {
  window_wall_ns_ += wall_ns;
  window_alone_ns_ += alone_ns;
  if (++window_runs_ < adaptive_.probe_runs) return;
  const double speedup =
      window_wall_ns_ > 0 ? static_cast<double>(window_alone_ns_) / static_cast<double>(window_wall_ns_) : 0;
  stats_.last_speedup = speedup;
  window_runs_ = 0;
  window_wall_ns_ = window_alone_ns_ = 0;
  if (speedup >= adaptive_.min_speedup) {
    next_inline_ = adaptive_.inline_runs;
    return;
  }
  inline_left_ = next_inline_;
  next_inline_ = std::min(adaptive_.max_inline_runs, 2 * next_inline_);
}

void TaskPool::drain(uint64_t generation, size_t n, const std::function<void(size_t)>& fn) {
  uint64_t c = claim_.load(std::memory_order_acquire);
  while ((c >> kIndexBits) == generation && (c & kIndexMask) < n) {
    if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel)) continue;
    // Claimed: the job cannot end before this task is counted, so fn stays valid.
    run_measured(static_cast<size_t>(c & kIndexMask), fn);
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
