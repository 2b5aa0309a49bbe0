// The kafka source's priority levels (`priority: [t.high, t.normal, t.low]`): which
// levels may fetch and how many records each may hand out in the next poll. Pure logic,
// no librdkafka: the source tells it which levels have backlog and how many records it
// holds fetched but not yet handed out, and afterwards how many of each it handed out.
//
// The rule: the "leader" is the highest level with backlog. It and every level above it
// fetch and hand out without limit. Every level below it is paused, except that each one
// is owed `min_share` of the records handed out (counted per poll, carried over), so it
// never starves: it may hand out what it is owed (while it has backlog; at most a batch),
// and it fetches only to keep a buffer of at most one batch ready for that. With
// min_share 0 lower levels are paused outright.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

namespace exactly::kafka {

class PriorityPlanner {
 public:
  static constexpr size_t kUnlimited = std::numeric_limits<size_t>::max();

  struct LevelState {
    bool backlog = false;  // records are waiting (on the broker or buffered)
    size_t buffered = 0;   // fetched, not handed out yet
    bool fetching = true;  // not paused by priority right now
  };
  struct Plan {
    int leader = -1;                // highest-priority level with backlog; -1: none
    std::vector<bool> fetch;        // may fetch from the broker (else paused)
    std::vector<size_t> allowance;  // records it may hand out in this poll
    std::vector<bool> backlog;      // as given to plan()
  };

  // min_share: fraction of the handed-out records each level below the leader is owed;
  // (levels - 1) * min_share must stay below 1. batch_size: most records per poll.
  PriorityPlanner(size_t levels, double min_share, size_t batch_size);

  Plan plan(const std::vector<LevelState>& levels) const;
  // After the poll that followed `plan`: the records handed out per level.
  void handed(const Plan& plan, const std::vector<size_t>& counts);
  // A level is unassigned or rewound: what it was owed no longer means anything.
  void forget(size_t level) { owed_[level] = 0; }

  size_t levels() const { return owed_.size(); }
  double owed(size_t level) const { return owed_[level]; }
  // Largest buffer a level below the leader fetches towards (0: it never fetches).
  size_t buffer_target() const { return buffer_target_; }
  // A paused level below the leader fetches again once its buffer is below this.
  size_t refill_below() const { return (buffer_target_ + 1) / 2; }

 private:
  double share_;
  double owed_cap_;
  size_t buffer_target_;
  std::vector<double> owed_;
};

}  // namespace exactly::kafka
