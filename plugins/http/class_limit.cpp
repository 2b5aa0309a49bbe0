#include "class_limit.hpp"

#include <algorithm>
#include <map>

namespace exactly::http {

bool ClassLimit::set(double rate, double burst, Clock::time_point now, bool shared) {
  std::lock_guard<std::mutex> g(mu_);
  const bool differs = shared && set_once_ && (bucket_.rate() != rate || bucket_.burst() != std::max(1.0, burst));
  bucket_.set(rate, burst, now);
  set_once_ = true;
  return !differs;
}

double ClassLimit::rate() const {
  std::lock_guard<std::mutex> g(mu_);
  return bucket_.rate();
}

double ClassLimit::tokens(Clock::time_point now) {
  std::lock_guard<std::mutex> g(mu_);
  return bucket_.tokens(now);
}

Clock::time_point ClassLimit::next_token(Clock::time_point now) {
  std::lock_guard<std::mutex> g(mu_);
  return bucket_.next_token(now);
}

bool ClassLimit::try_take(Clock::time_point now) {
  std::lock_guard<std::mutex> g(mu_);
  return bucket_.try_take(now);
}

void ClassLimit::give_back() {
  std::lock_guard<std::mutex> g(mu_);
  bucket_.give_back();
}

Clock::time_point ClassLimit::paused_until() const {
  std::lock_guard<std::mutex> g(mu_);
  return paused_until_;
}

void ClassLimit::pause_until(Clock::time_point t) {
  std::lock_guard<std::mutex> g(mu_);
  paused_until_ = std::max(paused_until_, t);
}

std::shared_ptr<ClassLimit> class_limit(const std::string& group, const std::string& cls) {
  if (group.empty()) return std::make_shared<ClassLimit>();
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<ClassLimit>> groups;
  std::lock_guard<std::mutex> g(mu);
  std::erase_if(groups, [](const auto& e) { return e.second.expired(); });
  auto& slot = groups[group + '\0' + cls];
  auto limit = slot.lock();
  if (!limit) {
    limit = std::make_shared<ClassLimit>();
    slot = limit;
  }
  return limit;
}

}  // namespace exactly::http
