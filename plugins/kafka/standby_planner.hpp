// Which partitions a member should keep standby copies of. librdkafka 2.0.2 has no
// public API for a custom assignor, so the assignment cannot be told to prefer a host
// with a warm copy; instead the warm copies are put where the assignment will go. The
// group uses the range assignor (the source forces it), whose result is a pure function
// of the member list: per topic, members sorted by group.instance.id (static members)
// or member id, partitions split into contiguous ranges, the first P % H members one
// extra. For every way `replicas` other members can leave, a member computes the range
// assignment of the survivors and keeps warm what it would get and does not own now.
// The model is checked against the group's actual assignment first; when it does not
// match, the plan falls back to every partition not owned here.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace exactly::kafka {

using TopicPartition = std::pair<std::string, int32_t>;

struct GroupMember {
  std::string member_id;
  std::string instance_id;  // group.instance.id; empty for a dynamic member
  std::vector<TopicPartition> owned;
};

struct StandbyPlan {
  bool modelled = false;  // the assignment matched the range model
  std::string why;        // when not modelled
  std::vector<TopicPartition> warm;  // sorted
};

StandbyPlan plan_standbys(const std::vector<GroupMember>& members, const std::string& self_member_id,
                          int replicas);

}  // namespace exactly::kafka
