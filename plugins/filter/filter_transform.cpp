#include "filter_transform.hpp"

namespace exactly::filter {

using sdk::Status;

FilterTransform::FilterTransform(sdk::Host host, const sdk::Config& config)
    : host_(host), rules_(Rules::from(config)) {}

Status FilterTransform::validate(const sdk::Config& config) {
  Rules::from(config);
  return Status::ok();
}

Status FilterTransform::process(const sdk::Batch& in, const sdk::Emitter& out) {
  std::shared_ptr<const Rules> rules;
  {
    std::lock_guard<std::mutex> g(mu_);
    rules = rules_;
  }
  size_t dropped = 0, invalid = 0;
  std::string why;
  for (size_t i = 0; i < in.size(); ++i) {
    Verdict v = matcher_.test(*rules, in[i].value, why);
    bool keep;
    if (v == Verdict::kInvalid) {
      ++invalid;
      if (rules->on_invalid == OnInvalid::kReject) {
        out.reject(i, why);
        continue;
      }
      keep = rules->on_invalid == OnInvalid::kKeep;
    } else {
      keep = (v == Verdict::kMatch) == (rules->action == Action::kKeep);
    }
    if (keep)
      out.keep(i);
    else
      ++dropped;
  }
  if (dropped != 0) host_.counter("filter_dropped_total", static_cast<double>(dropped));
  if (invalid != 0) host_.counter("filter_invalid_total", static_cast<double>(invalid));
  return Status::ok();
}

Status FilterTransform::reconfigure(const sdk::Config& config) {
  auto next = Rules::from(config);  // a bad config throws and leaves the rules as they were
  std::lock_guard<std::mutex> g(mu_);
  rules_ = std::move(next);
  return Status::ok();
}

}  // namespace exactly::filter
