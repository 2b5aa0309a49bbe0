#include "engine/standby_set.hpp"

#include <algorithm>

namespace exactly::engine {

namespace {
ex_bytes bytes_of(const std::string& s) {
  return ex_bytes{reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
std::string str(ex_bytes b) {
  return b.ptr ? std::string(reinterpret_cast<const char*>(b.ptr), b.len) : std::string();
}
}  // namespace

void StandbySet::replace(const ex_partition* parts, size_t n) {
  std::vector<Part> next;
  next.reserve(n);
  for (size_t i = 0; i < n; ++i)
    next.push_back(Part{parts[i].id, str(parts[i].name), str(parts[i].topic), parts[i].number});
  auto same = [](const Part& a, const Part& b) { return a.id == b.id && a.name == b.name; };
  if (next.size() != parts_.size() || !std::equal(next.begin(), next.end(), parts_.begin(), same))
    changed_ = true;
  parts_ = std::move(next);
}

void StandbySet::clear() {
  if (!parts_.empty()) changed_ = true;
  parts_.clear();
}

bool StandbySet::due(Clock::time_point now) const {
  // Every tick even when empty: it is the stages' regular call between rounds.
  return changed_ || now - last_call_ >= kTick;
}

const std::vector<ex_partition>& StandbySet::without(const std::function<bool(int32_t)>& assigned) {
  abi_.clear();
  for (const auto& p : parts_) {
    if (assigned(p.id)) continue;
    abi_.push_back(ex_partition{sizeof(ex_partition), p.id, bytes_of(p.name), bytes_of(p.topic),
                                p.number, -1});
  }
  return abi_;
}

void StandbySet::called(Clock::time_point now) {
  changed_ = false;
  last_call_ = now;
}

}  // namespace exactly::engine
