// The standby planner's model of the range assignor: warm copies land on the member the
// assignment gives a partition to when its owner leaves. (That librdkafka's group really
// assigns that way is checked against a real broker in scale_out_test.)
#include "standby_planner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace ek = exactly::kafka;
using TP = ek::TopicPartition;

namespace {

// Range assignment of `topic` with `p` partitions over members sorted by their ids.
std::vector<ek::GroupMember> range_group(const std::vector<std::string>& ids, int32_t p,
                                         bool static_members, const std::string& topic = "in") {
  std::vector<std::string> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  std::vector<ek::GroupMember> out;
  const auto h = static_cast<int32_t>(sorted.size());
  for (int32_t i = 0; i < h; ++i) {
    ek::GroupMember m;
    m.member_id = static_members ? "zz-" + sorted[i] : sorted[i];  // order must come from instance ids
    if (static_members) m.instance_id = sorted[i];
    int32_t per = p / h, extra = p % h;
    int32_t start = i * per + std::min(i, extra), len = per + (i < extra ? 1 : 0);
    for (int32_t n = start; n < start + len; ++n) m.owned.emplace_back(topic, n);
    out.push_back(m);
  }
  // Description order is not sorted order.
  std::reverse(out.begin(), out.end());
  return out;
}

std::set<TP> warm_of(const std::vector<ek::GroupMember>& g, const std::string& self, int replicas) {
  ek::StandbyPlan plan = ek::plan_standbys(g, self, replicas);
  EXPECT_TRUE(plan.modelled) << plan.why;
  return {plan.warm.begin(), plan.warm.end()};
}

}  // namespace

TEST(StandbyPlanner, ThreeHostsFourPartitionsWarmWhereTheRangeAssignorMovesThem) {
  auto g = range_group({"a", "b", "c"}, 4, true);  // a: 0,1  b: 2  c: 3
  EXPECT_EQ(warm_of(g, "zz-a", 1), (std::set<TP>{}));
  EXPECT_EQ(warm_of(g, "zz-b", 1), (std::set<TP>{{"in", 0}, {"in", 1}, {"in", 3}}));
  EXPECT_EQ(warm_of(g, "zz-c", 1), (std::set<TP>{{"in", 2}}));
}

TEST(StandbyPlanner, EveryPartitionOfALeavingMemberLandsOnAMemberThatKeptItWarm) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int h = 2 + static_cast<int>(rng() % 5);
    const int32_t p = 1 + static_cast<int32_t>(rng() % 12);
    const int replicas = 1 + static_cast<int>(rng() % 2);
    const bool stat = rng() % 2 == 0;
    std::vector<std::string> ids;
    for (int i = 0; i < h; ++i) ids.push_back("host-" + std::to_string(rng() % 1000) + "-" + std::to_string(i));
    auto g = range_group(ids, p, stat);
    std::map<std::string, std::set<TP>> warm;
    for (const auto& m : g) warm[m.member_id] = warm_of(g, m.member_id, replicas);
    // Any single member leaves: the survivors' new assignment.
    for (size_t gone = 0; gone < g.size(); ++gone) {
      std::vector<std::string> left;
      for (size_t i = 0; i < g.size(); ++i)
        if (i != gone) left.push_back(stat ? g[i].instance_id : g[i].member_id);
      auto after = range_group(left, p, stat);
      for (const auto& m : after) {
        const std::string id = m.member_id;  // same naming as before
        const auto& before = *std::find_if(g.begin(), g.end(), [&](auto& x) { return x.member_id == id; });
        std::set<TP> had(before.owned.begin(), before.owned.end());
        for (const auto& tp : m.owned)
          if (had.count(tp) == 0)
            EXPECT_EQ(warm[id].count(tp), 1u) << "trial " << trial << ": " << id << " gets " << tp.first
                                              << "/" << tp.second << " cold after a member left";
      }
    }
  }
}

TEST(StandbyPlanner, TwoReplicasCoverTwoMembersLeaving) {
  auto g = range_group({"a", "b", "c", "d"}, 8, true);  // 2 each
  auto one = warm_of(g, "zz-d", 1);
  auto two = warm_of(g, "zz-d", 2);
  EXPECT_TRUE(std::includes(two.begin(), two.end(), one.begin(), one.end()));
  // a and b gone: {c, d} split 8 partitions 4/4 and d gets 4..7.
  for (int32_t n : {4, 5}) EXPECT_EQ(two.count({"in", n}), 1u) << n;
  EXPECT_GT(two.size(), one.size());
}

TEST(StandbyPlanner, AnAssignmentThatIsNotTheRangeAssignorsWarmsEverythingNotOwned) {
  auto g = range_group({"a", "b"}, 4, true);
  std::swap(g[0].owned, g[1].owned);  // round-robin-like, or another assignor
  ek::StandbyPlan plan = ek::plan_standbys(g, "zz-a", 1);
  EXPECT_FALSE(plan.modelled);
  EXPECT_NE(plan.why.find("range"), std::string::npos) << plan.why;
  const auto& self = *std::find_if(g.begin(), g.end(), [](auto& m) { return m.member_id == "zz-a"; });
  EXPECT_EQ(plan.warm.size(), 4u - self.owned.size());
  for (const auto& tp : self.owned)
    EXPECT_EQ(std::count(plan.warm.begin(), plan.warm.end(), tp), 0);
}

TEST(StandbyPlanner, NoReplicasOrAloneMeansNoStandby) {
  auto g = range_group({"a", "b", "c"}, 6, false);
  EXPECT_TRUE(ek::plan_standbys(g, "a", 0).warm.empty());
  auto alone = range_group({"a"}, 6, false);
  ek::StandbyPlan plan = ek::plan_standbys(alone, "a", 1);
  EXPECT_TRUE(plan.modelled);
  EXPECT_TRUE(plan.warm.empty());
}

TEST(StandbyPlanner, AMemberMissingFromTheDescriptionIsNotModelled) {
  auto g = range_group({"a", "b"}, 4, false);
  ek::StandbyPlan plan = ek::plan_standbys(g, "c", 1);
  EXPECT_FALSE(plan.modelled);
  EXPECT_EQ(plan.warm.size(), 4u);
}
