#include "standby_planner.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace exactly::kafka {

namespace {

using Assignment = std::vector<std::set<TopicPartition>>;  // by index into `order`

// Kafka's RangeAssignor over `order` (indices into the sorted member list).
Assignment range(const std::vector<size_t>& order, const std::map<std::string, int32_t>& counts,
                 size_t members) {
  Assignment out(members);
  const auto h = static_cast<int32_t>(order.size());
  if (h == 0) return out;
  for (const auto& [topic, p] : counts) {
    const int32_t per = p / h, extra = p % h;
    for (int32_t i = 0; i < h; ++i) {
      const int32_t start = i * per + std::min(i, extra);
      const int32_t len = per + (i < extra ? 1 : 0);
      for (int32_t n = start; n < start + len; ++n) out[order[static_cast<size_t>(i)]].emplace(topic, n);
    }
  }
  return out;
}

// Calls fn with every k-subset of [0, n) (as a sorted index vector); false stops.
template <typename Fn>
void subsets(size_t n, size_t k, Fn fn) {
  std::vector<size_t> idx(k);
  for (size_t i = 0; i < k; ++i) idx[i] = i;
  for (;;) {
    if (!fn(idx)) return;
    size_t i = k;
    while (i > 0 && idx[i - 1] == n - k + (i - 1)) --i;
    if (i == 0) return;
    ++idx[i - 1];
    for (size_t j = i; j < k; ++j) idx[j] = idx[j - 1] + 1;
  }
}

uint64_t choose(uint64_t n, uint64_t k) {
  uint64_t r = 1;
  for (uint64_t i = 1; i <= k; ++i) {
    r = r * (n - k + i) / i;
    if (r > 1000000) return r;
  }
  return r;
}

}  // namespace

StandbyPlan plan_standbys(const std::vector<GroupMember>& members, const std::string& self_member_id,
                          int replicas) {
  StandbyPlan plan;
  // Partition counts from the assignment itself: the range assignor hands out every one.
  std::map<std::string, int32_t> counts;
  std::set<TopicPartition> all;
  for (const auto& m : members)
    for (const auto& tp : m.owned) {
      all.insert(tp);
      int32_t& c = counts[tp.first];
      c = std::max(c, tp.second + 1);
    }
  auto self_it = std::find_if(members.begin(), members.end(),
                              [&](const GroupMember& m) { return m.member_id == self_member_id; });
  std::set<TopicPartition> mine;
  if (self_it != members.end()) mine.insert(self_it->owned.begin(), self_it->owned.end());
  auto fallback = [&](std::string why) {
    plan.modelled = false;
    plan.why = std::move(why);
    plan.warm.clear();
    for (const auto& tp : all)
      if (mine.count(tp) == 0) plan.warm.push_back(tp);
    return plan;
  };
  if (replicas <= 0) {
    plan.modelled = true;
    return plan;
  }
  if (self_it == members.end()) return fallback("this member is not in the group's description yet");

  // librdkafka sorts static members by group.instance.id, dynamic ones by member id.
  const bool all_static = std::all_of(members.begin(), members.end(),
                                      [](const GroupMember& m) { return !m.instance_id.empty(); });
  const bool none_static = std::all_of(members.begin(), members.end(),
                                       [](const GroupMember& m) { return m.instance_id.empty(); });
  if (!all_static && !none_static) return fallback("the group mixes static and dynamic members");
  std::vector<size_t> order(members.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return all_static ? members[a].instance_id < members[b].instance_id
                      : members[a].member_id < members[b].member_id;
  });
  for (const auto& [topic, n] : counts)
    for (int32_t p = 0; p < n; ++p)
      if (all.count({topic, p}) == 0)
        return fallback("partition " + std::to_string(p) + " of " + topic + " is not assigned");
  Assignment now = range(order, counts, members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    std::set<TopicPartition> owned(members[i].owned.begin(), members[i].owned.end());
    if (owned != now[i])
      return fallback("the group's assignment is not the range assignor's (member " +
                      members[i].member_id + ")");
  }

  const size_t self = static_cast<size_t>(self_it - members.begin());
  std::vector<size_t> others;  // positions in `order` of the other members
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] != self) others.push_back(i);
  const size_t k = std::min(others.size(), static_cast<size_t>(replicas));
  if (k == 0) {
    plan.modelled = true;
    return plan;
  }
  if (choose(others.size(), k) > 4096) return fallback("too many ways for members to leave to model");
  std::set<TopicPartition> warm;
  subsets(others.size(), k, [&](const std::vector<size_t>& gone) {
    std::vector<size_t> left;
    size_t g = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      if (g < gone.size() && others[gone[g]] == i) {
        ++g;
        continue;
      }
      left.push_back(order[i]);
    }
    Assignment after = range(left, counts, members.size());
    for (const auto& tp : after[self])
      if (mine.count(tp) == 0) warm.insert(tp);
    return true;
  });
  plan.modelled = true;
  plan.warm.assign(warm.begin(), warm.end());
  return plan;
}

}  // namespace exactly::kafka
