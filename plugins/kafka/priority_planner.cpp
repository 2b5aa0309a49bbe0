#include "priority_planner.hpp"

#include <algorithm>
#include <cmath>

namespace exactly::kafka {

PriorityPlanner::PriorityPlanner(size_t levels, double min_share, size_t batch_size)
    : share_(min_share),
      // While a level's records are still being fetched, what it is owed waits for them;
      // at most a batch, so catching up is never a burst.
      owed_cap_(static_cast<double>(std::max<size_t>(1, batch_size))),
      owed_(levels, 0.0) {}

PriorityPlanner::Plan PriorityPlanner::plan(const std::vector<bool>& backlog) const {
  Plan p;
  const size_t n = owed_.size();
  p.backlog.assign(n, false);
  for (size_t i = 0; i < n && i < backlog.size(); ++i) p.backlog[i] = backlog[i];
  for (size_t i = 0; i < n; ++i)
    if (p.backlog[i]) {
      p.leader = static_cast<int>(i);
      break;
    }
  p.fetch.assign(n, true);
  p.allowance.assign(n, kUnlimited);
  if (p.leader < 0) return p;
  for (size_t i = static_cast<size_t>(p.leader) + 1; i < n; ++i) {
    p.allowance[i] = static_cast<size_t>(std::floor(owed_[i]));
    p.fetch[i] = share_ > 0;
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
