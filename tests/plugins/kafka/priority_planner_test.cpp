// The kafka source's priority planner (pure logic): which levels fetch and how much each
// may hand out. A small simulated source drives it through whole runs; the same rules
// against a real broker: kafka_priority_test.cpp.
#include "priority_planner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <vector>

namespace ek = exactly::kafka;
using Planner = ek::PriorityPlanner;

namespace {

// A source with `broker[i]` records waiting per level: a fetching level gets up to
// `fetch_per_poll` more into its buffer (librdkafka's prefetch) per poll; a poll hands out at most `batch`
// records, level by level, within the plan's allowances. Returns the level of every
// record in the order handed out.
struct Sim {
  std::vector<size_t> broker, buffer;
  std::vector<bool> fetching;
  size_t batch, fetch_per_poll;
  std::vector<int> out;

  Sim(std::vector<size_t> waiting, size_t batch_size, size_t per_fetch)
      : broker(std::move(waiting)), buffer(broker.size(), 0), fetching(broker.size(), true),
        batch(batch_size), fetch_per_poll(per_fetch) {}

  std::vector<bool> state() const {
    std::vector<bool> s(broker.size());
    for (size_t i = 0; i < s.size(); ++i) s[i] = broker[i] + buffer[i] > 0;
    return s;
  }

  void run(Planner& pl, int max_polls = 100000) {
    for (int n = 0; n < max_polls; ++n) {
      bool any = false;
      for (size_t i = 0; i < broker.size(); ++i) any = any || broker[i] + buffer[i] > 0;
      if (!any) return;
      Planner::Plan plan = pl.plan(state());
      fetching = plan.fetch;
      for (size_t i = 0; i < broker.size(); ++i) {
        if (!plan.fetch[i]) continue;
        size_t got = std::min(broker[i], fetch_per_poll);
        broker[i] -= got;
        buffer[i] += got;
      }
      // Like the source: what lower levels are owed first, so a batch the leader could
      // fill alone still has room for them, then the rest.
      std::vector<size_t> counts(broker.size(), 0);
      size_t room = batch;
      for (bool limited : {true, false})
        for (size_t i = 0; i < broker.size() && room > 0; ++i) {
          if ((plan.allowance[i] != Planner::kUnlimited) != limited) continue;
          size_t give = std::min({buffer[i], plan.allowance[i], room});
          buffer[i] -= give;
          room -= give;
          counts[i] += give;
          for (size_t k = 0; k < give; ++k) out.push_back(static_cast<int>(i));
        }
      pl.handed(plan, counts);
    }
    FAIL() << "the simulated source did not drain";
  }
};

size_t last_of(const std::vector<int>& v, int level) {
  for (size_t i = v.size(); i-- > 0;)
    if (v[i] == level) return i;
  return v.size();
}

size_t count_before(const std::vector<int>& v, int level, size_t end) {
  return static_cast<size_t>(std::count(v.begin(), v.begin() + static_cast<long>(end), level));
}

}  // namespace

TEST(PriorityPlanner, TheHighestLevelWithBacklogLeadsAndLevelsAboveItAreNeverLimited) {
  Planner pl(3, 0.05, 100);
  auto plan = pl.plan({false, true, true});
  EXPECT_EQ(plan.leader, 1);
  EXPECT_TRUE(plan.fetch[0]);  // no backlog, but new records must come at once
  EXPECT_EQ(plan.allowance[0], Planner::kUnlimited);
  EXPECT_EQ(plan.allowance[1], Planner::kUnlimited);
  EXPECT_EQ(plan.allowance[2], 0u) << "owed nothing yet";
  EXPECT_TRUE(plan.fetch[2]) << "with a share it keeps its records coming";
  auto none = pl.plan({false, false, false});
  EXPECT_EQ(none.leader, -1);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(none.fetch[i]);
    EXPECT_EQ(none.allowance[i], Planner::kUnlimited);
  }
}

TEST(PriorityPlanner, ALowerLevelIsOwedItsShareOfWhatWasHandedOut) {
  Planner pl(3, 0.1, 1000);
  auto plan = pl.plan({true, true, true});
  pl.handed(plan, {200, 0, 0});
  EXPECT_DOUBLE_EQ(pl.owed(1), 20.0);
  EXPECT_DOUBLE_EQ(pl.owed(2), 20.0);
  plan = pl.plan({true, true, true});
  EXPECT_EQ(plan.allowance[1], 20u);
  pl.handed(plan, {180, 20, 5});
  EXPECT_DOUBLE_EQ(pl.owed(1), 20.5);  // 20 + 0.1 * 205 - 20
  EXPECT_DOUBLE_EQ(pl.owed(2), 35.5);  // 20 + 20.5 - 5
  EXPECT_DOUBLE_EQ(pl.owed(0), 0.0);
}

TEST(PriorityPlanner, WhatALevelIsOwedIsCappedAndAnEmptyLevelIsOwedNothing) {
  Planner pl(2, 0.1, 100);
  for (int i = 0; i < 50; ++i) {
    auto plan = pl.plan({true, true});
    pl.handed(plan, {100, 0});
  }
  EXPECT_DOUBLE_EQ(pl.owed(1), 100.0) << "one batch while its records are on their way";
  auto plan = pl.plan({true, false});
  pl.handed(plan, {100, 0});
  EXPECT_DOUBLE_EQ(pl.owed(1), 0.0) << "nothing to give, nothing banked";
}

TEST(PriorityPlanner, WithoutAShareLowerLevelsArePausedAndTheOrderIsStrict) {
  Planner pl(3, 0.0, 100);
  auto plan = pl.plan({true, true, true});
  EXPECT_FALSE(plan.fetch[1]);
  EXPECT_FALSE(plan.fetch[2]);
  Sim sim({5000, 3000, 2000}, 100, 400);
  sim.run(pl);
  ASSERT_EQ(sim.out.size(), 10000u);
  EXPECT_TRUE(std::is_sorted(sim.out.begin(), sim.out.end())) << "high, then normal, then low";
}

TEST(PriorityPlanner, UnderFullBacklogHighDrainsFirstAndEachLowerLevelGetsItsShare) {
  const double share = 0.05;
  Planner pl(3, share, 100);
  Sim sim({20000, 20000, 20000}, 100, 500);
  sim.run(pl);
  ASSERT_EQ(sim.out.size(), 60000u);
  size_t high_end = last_of(sim.out, 0), normal_end = last_of(sim.out, 1);
  EXPECT_LT(high_end, normal_end);
  EXPECT_LT(normal_end, last_of(sim.out, 2));
  // While high had backlog, normal and low each got about their share, not more.
  for (int level : {1, 2}) {
    double got = static_cast<double>(count_before(sim.out, level, high_end)) / high_end;
    EXPECT_GE(got, share * 0.9) << "level " << level;
    EXPECT_LE(got, share * 1.1) << "level " << level;
  }
  // Then normal leads and low keeps its share.
  size_t low_mid = count_before(sim.out, 2, normal_end) - count_before(sim.out, 2, high_end);
  double got = static_cast<double>(low_mid) / static_cast<double>(normal_end - high_end);
  EXPECT_GE(got, share * 0.9);
  EXPECT_LE(got, share * 1.1);
}

TEST(PriorityPlanner, ALevelUnderTheLeaderIsOwedOnlyWhileItHasBacklog) {
  Planner pl(3, 0.1, 1000);
  auto plan = pl.plan({true, true, false});
  pl.handed(plan, {500, 0, 0});
  EXPECT_DOUBLE_EQ(pl.owed(1), 50.0);
  EXPECT_DOUBLE_EQ(pl.owed(2), 0.0);
  pl.forget();
  EXPECT_DOUBLE_EQ(pl.owed(1), 0.0);
}

TEST(PriorityPlanner, ALevelWithNothingLeftStopsLeadingAtOnce) {
  Planner pl(3, 0.0, 100);
  Sim sim({0, 300, 300}, 100, 1000);
  sim.run(pl);
  ASSERT_EQ(sim.out.size(), 600u);
  EXPECT_EQ(sim.out.front(), 1);
  EXPECT_TRUE(std::is_sorted(sim.out.begin(), sim.out.end()));
}
