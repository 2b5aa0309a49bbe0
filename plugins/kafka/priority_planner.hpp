// The kafka source's priority levels (`priority: [t.high, t.normal, t.low]`): which
// levels may fetch and how many records each may hand out in the next poll. Pure logic,
// no librdkafka: the source tells it which levels have backlog, and afterwards how many
// records of each it handed out.
//
// The rule: the "leader" is the highest level with backlog. It and every level above it
// fetch and hand out without limit. Each level below it is owed `min_share` of the
// records handed out (counted per poll, carried over while it has backlog, at most a
// batch), so it never starves, and may hand out what it is owed. With min_share 0 the
// levels below the leader are paused outright; with a share they keep fetching so their
// share is ready when it is due (librdkafka bounds that prefetch).
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

namespace exactly::kafka {

class PriorityPlanner {
 public:
  static constexpr size_t kUnlimited = std::numeric_limits<size_t>::max();

  struct Plan {
    int leader = -1;                // highest-priority level with backlog; -1: none
    std::vector<bool> backlog;      // as given to plan()
    std::vector<bool> fetch;        // may fetch from the broker (else paused)
    std::vector<size_t> allowance;  // records it may hand out in this poll
  };

  // min_share: fraction of the handed-out records each level below the leader is owed;
  // (levels - 1) * min_share must stay below 1. batch_size: most records per poll.
  PriorityPlanner(size_t levels, double min_share, size_t batch_size);

  // backlog[i]: records are waiting for level i (on the broker or fetched).
  Plan plan(const std::vector<bool>& backlog) const;
  // After the poll that followed `plan`: the records handed out per level.
  void handed(const Plan& plan, const std::vector<size_t>& counts);
  // A new assignment: what was owed no longer means anything.
  void forget() { owed_.assign(owed_.size(), 0.0); }

  size_t levels() const { return owed_.size(); }
  double owed(size_t level) const { return owed_[level]; }

 private:
  double share_;
  double owed_cap_;
  std::vector<double> owed_;
};

}  // namespace exactly::kafka
