// The task pool: every task of a job runs exactly once and before run() returns, whether
// a worker or the calling thread claims it; a worker woken after its job ended runs
// nothing of it; and a busy worker does not hold the join when the caller can run the
// task itself.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "engine/task_pool.hpp"

using exactly::engine::TaskPool;

TEST(TaskPool, EveryTaskOfEveryJobRunsOnceBeforeRunReturns) {
  TaskPool pool(2, "pool-test");
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
  TaskPool pool(1, "pool-test");
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
