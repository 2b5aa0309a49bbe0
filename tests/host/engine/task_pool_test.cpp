// The task pool: every task of a job runs exactly once and before run() returns, whether
// a worker or the calling thread claims it; a worker woken after its job ended runs
// nothing of it; a busy worker does not hold the join when the caller can run the task
// itself; and fan-outs that buy no speed give way to runs on the caller alone, with
// probes that fan out again.
#include <gtest/gtest.h>

#include <sched.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/task_pool.hpp"

using exactly::engine::TaskPool;

namespace {
// Always fans out: the tests of the fan-out itself.
TaskPool::Adaptive always_fan_out() {
  TaskPool::Adaptive a;
  a.min_speedup = 0;
  return a;
}
}  // namespace

TEST(TaskPool, EveryTaskOfEveryJobRunsOnceBeforeRunReturns) {
  TaskPool pool(2, "pool-test", always_fan_out());
  constexpr int kJobs = 20000;
  std::vector<std::atomic<int>> runs(kJobs * 3);
  std::atomic<int> late{0};
  std::atomic<long> by_caller{0};
  const auto caller = std::this_thread::get_id();
  for (int j = 0; j < kJobs; ++j) {
    std::atomic<bool> returned{false};
    pool.run(3, [&](size_t k) {
      if (returned.load()) late.fetch_add(1);
      runs[static_cast<size_t>(j) * 3 + k].fetch_add(1);
      if (k > 0 && std::this_thread::get_id() == caller) by_caller.fetch_add(1);
    });
    returned.store(true);
    for (int k = 0; k < 3; ++k)
      ASSERT_EQ(runs[static_cast<size_t>(j) * 3 + k].load(), 1) << "job " << j << " task " << k;
  }
  EXPECT_EQ(late.load(), 0) << "a task ran after its job's run() returned";
  std::printf("tasks 1-2 run by the caller: %ld of %d\n", by_caller.load(), 2 * kJobs);
}

TEST(TaskPool, TheCallerRunsATaskTheWorkerHasNotStarted) {
  // One worker and three tasks: the worker can take only one at a time, and of tasks 1
  // and 2 one is left for whichever thread is free first. Both are slow and the
  // caller's own task 0 is instant, so that is the caller, unless it is kept off a core
  // for a whole slow task (hence "most", not "all"). A worker per task would never let
  // the caller run one.
  TaskPool pool(1, "pool-test", always_fan_out());
  std::vector<std::thread::id> ran(3);
  const auto caller = std::this_thread::get_id();
  int caller_ran_other = 0;
  for (int j = 0; j < 20; ++j) {
    pool.run(3, [&](size_t k) {
      ran[k] = std::this_thread::get_id();
      if (k > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    });
    if (ran[1] == caller || ran[2] == caller) ++caller_ran_other;
  }
  EXPECT_GE(caller_ran_other, 15) << "the caller waited instead of running an unclaimed task";
}

TEST(TaskPool, FanOutsThatBuyNoSpeedGiveWayToTheCallerThenProbeAgain) {
  // A speedup no window can reach: each window of 4 fan-outs fails, so the caller runs
  // the next 8 jobs alone, then 16, then 16 again (the ceiling), each after a probe.
  TaskPool::Adaptive a;
  a.probe_runs = 4;
  a.min_speedup = 1e9;
  a.inline_runs = 8;
  a.max_inline_runs = 16;
  TaskPool pool(2, "pool-test", a);
  const auto caller = std::this_thread::get_id();
  std::string modes;  // F: a job some task of which may have left the caller; C: on the caller
  for (int j = 0; j < 4 + 8 + 4 + 16 + 4 + 16 + 1; ++j) {
    const TaskPool::Stats before = pool.stats();
    std::vector<std::thread::id> ran(3);
    pool.run(3, [&](size_t k) { ran[k] = std::this_thread::get_id(); });
    const TaskPool::Stats after = pool.stats();
    const bool fanned = after.fanned_out == before.fanned_out + 1;
    ASSERT_EQ(after.fanned_out + after.on_caller, before.fanned_out + before.on_caller + 1);
    if (!fanned)
      for (int k = 0; k < 3; ++k) ASSERT_EQ(ran[k], caller) << "job " << j << " task " << k;
    modes += fanned ? 'F' : 'C';
  }
  EXPECT_EQ(modes, std::string(4, 'F') + std::string(8, 'C') + std::string(4, 'F') + std::string(16, 'C') +
                       std::string(4, 'F') + std::string(16, 'C') + "F");
  EXPECT_GT(pool.stats().last_speedup, 0);
}

TEST(TaskPool, TasksThatWaitSideBySideKeepFanningOut) {
  // Tasks that wait on something other than a core (a remote call) take half the time
  // side by side, using no CPU: that is a speedup, and the pool keeps fanning out.
  TaskPool pool(1, "pool-test");
  for (int j = 0; j < 48; ++j)
    pool.run(2, [&](size_t) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  EXPECT_GT(pool.stats().last_speedup, 1.3);
  EXPECT_EQ(pool.stats().on_caller, 0u) << "last speedup " << pool.stats().last_speedup;
}

TEST(TaskPool, TasksThatComputeOnOneCoreMeasureNoSpeedupAndMoveToTheCaller) {
  // The caller and the worker share one core: whether they take turns or the caller runs
  // both tasks, the join takes as long as one thread would, and the next jobs run on the
  // caller. (Waits for the core are not counted as the tasks' own time.)
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  {
    TaskPool pool(1, "pool-test");  // the worker inherits the one core
    auto spin = [](size_t) {
      timespec a{}, b{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
      do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
      while ((b.tv_sec - a.tv_sec) * 1'000'000'000L + (b.tv_nsec - a.tv_nsec) < 2'000'000L);
    };
    for (int j = 0; j < 16; ++j) pool.run(2, spin);
    EXPECT_EQ(pool.stats().fanned_out, 16u);
    EXPECT_GT(pool.stats().last_speedup, 0.0) << "nothing measured: no /proc/thread-self/schedstat?";
    EXPECT_LT(pool.stats().last_speedup, 1.3);
    pool.run(2, spin);
    EXPECT_EQ(pool.stats().on_caller, 1u);
  }
  sched_setaffinity(0, sizeof saved, &saved);
}

TEST(TaskPool, FanOutsThatBuySpeedKeepFanningOut) {
  TaskPool::Adaptive a;
  a.probe_runs = 4;
  a.min_speedup = 0;  // any window passes
  TaskPool pool(1, "pool-test", a);
  for (int j = 0; j < 40; ++j) pool.run(2, [&](size_t) {});
  EXPECT_EQ(pool.stats().fanned_out, 40u);
  EXPECT_EQ(pool.stats().on_caller, 0u);
}
