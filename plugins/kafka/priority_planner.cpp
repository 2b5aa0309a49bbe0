#include "priority_planner.hpp"

#include <algorithm>
#include <cmath>

namespace exactly::kafka {

PriorityPlanner::PriorityPlanner(size_t levels, double min_share, size_t batch_size)
    : share_(min_share),
      // What a level with backlog is owed waits for its records while they are fetched
      // (a round trip, during which the leader's polls run from memory); one batch at
      // most, so it is never a burst. A level without backlog is owed nothing.
      owed_cap_(static_cast<double>(std::max<size_t>(1, batch_size))),
      // A refill takes a fetch round trip while the leader's records come from memory:
      // the buffer covers many polls' worth of share so the share does not wait on it.
      buffer_target_(min_share > 0 ? std::max<size_t>(1, batch_size) : 0),
      owed_(levels, 0.0) {}

PriorityPlanner::Plan PriorityPlanner::plan(const std::vector<LevelState>& levels) const {
  Plan p;
  const size_t n = owed_.size();
  for (size_t i = 0; i < n && i < levels.size(); ++i)
    if (levels[i].backlog) {
      p.leader = static_cast<int>(i);
      break;
    }
  p.backlog.assign(n, false);
  for (size_t i = 0; i < n && i < levels.size(); ++i) p.backlog[i] = levels[i].backlog;
  p.fetch.assign(n, true);
  p.allowance.assign(n, kUnlimited);
  if (p.leader < 0) return p;
  for (size_t i = static_cast<size_t>(p.leader) + 1; i < n; ++i) {
    p.allowance[i] = static_cast<size_t>(std::floor(owed_[i]));
    const LevelState l = i < levels.size() ? levels[i] : LevelState{};
    // Hysteresis: a level that filled its buffer stays paused until half of it is gone,
    // so it is not paused and resumed on every poll.
    p.fetch[i] = buffer_target_ > 0 &&
                 (l.buffered < refill_below() || (l.fetching && l.buffered < buffer_target_));
  }
  return p;
}

void PriorityPlanner::handed(const Plan& plan, const std::vector<size_t>& counts) {
  double total = 0;
  for (size_t c : counts) total += static_cast<double>(c);
  for (size_t i = 0; i < owed_.size(); ++i) {
    if (plan.leader < 0 || static_cast<int>(i) <= plan.leader) {
      owed_[i] = 0;  // not limited: nothing to owe
      continue;
    }
    if (i >= plan.backlog.size() || !plan.backlog[i]) {
      owed_[i] = 0;  // nothing to give: a share owed now would come later as a burst
      continue;
    }
    double got = i < counts.size() ? static_cast<double>(counts[i]) : 0;
    owed_[i] = std::clamp(owed_[i] + share_ * total - got, 0.0, owed_cap_);
  }
}

}  // namespace exactly::kafka
