#include "rate_classes.hpp"

namespace exactly::http {

void RateClasses::apply(const std::map<std::string, ClassSettings>& settings,
                        Clock::time_point now) {
  std::vector<RateClass> next;
  std::map<std::string, size_t, std::less<>> index;
  for (const auto& [name, cs] : settings) {
    RateClass rc;
    if (auto it = by_name_.find(name); it != by_name_.end()) rc = std::move(classes_[it->second]);
    rc.name = name;
    rc.labels = "class=" + name;
    double burst = cs.burst > 0 ? cs.burst : std::max(1.0, cs.rate);
    rc.bucket.set(cs.rate, burst, now);
    rc.fuse.configure(cs.open, cs.fuse_failures, cs.fuse_cooldown);
    rc.reroute_limited = cs.reroute_limited;
    rc.reroute_fused = cs.reroute_fused;
    index[name] = next.size();
    next.push_back(std::move(rc));
  }
  classes_ = std::move(next);
  by_name_ = std::move(index);
  default_ = by_name_.at("default");
}

size_t RateClasses::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? default_ : it->second;
}

}  // namespace exactly::http
