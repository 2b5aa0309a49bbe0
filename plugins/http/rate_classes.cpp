#include "rate_classes.hpp"

#include <cstdio>

namespace exactly::http {

namespace {
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}
}  // namespace

std::vector<std::string> RateClasses::apply(const std::map<std::string, ClassSettings>& settings,
                                           const std::string& rate_group, Clock::time_point now) {
  std::vector<std::string> replaced;
  std::vector<RateClass> next;
  std::map<std::string, size_t, std::less<>> index;
  for (const auto& [name, cs] : settings) {
    RateClass rc;
    if (auto it = by_name_.find(name); it != by_name_.end()) rc = std::move(classes_[it->second]);
    rc.name = name;
    rc.labels = "class=" + name;
    double burst = cs.burst > 0 ? cs.burst : std::max(1.0, cs.rate);
    // rate.group itself does not change in place (a change restarts the pipeline).
    if (!rc.limit) rc.limit = class_limit(rate_group, name);
    if (!rc.limit->set(cs.rate, burst, now, !rate_group.empty()))
      replaced.push_back("rate.group '" + rate_group + "' class '" + name + "': rate " +
                         number(cs.rate) + "/s, burst " + number(burst) +
                         " here replaces what another sink of the group set: the group has one "
                         "rate per class, the one applied last");
    rc.fuse.configure(cs.open, cs.fuse_failures, cs.fuse_cooldown);
    rc.reroute_limited = cs.reroute_limited;
    rc.reroute_fused = cs.reroute_fused;
    index[name] = next.size();
    next.push_back(std::move(rc));
  }
  classes_ = std::move(next);
  by_name_ = std::move(index);
  default_ = by_name_.at("default");
  return replaced;
}

size_t RateClasses::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? default_ : it->second;
}

}  // namespace exactly::http
