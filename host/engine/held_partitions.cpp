#include "engine/held_partitions.hpp"

#include <algorithm>
#include <utility>

namespace exactly::engine {

namespace {
std::string str(ex_bytes b) {
  return b.ptr ? std::string(reinterpret_cast<const char*>(b.ptr), b.len) : std::string();
}
ex_bytes bytes_of(const std::string& s) {
  return ex_bytes{reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
}  // namespace

ex_partition HeldPartitions::Part::abi() const {
  return ex_partition{sizeof(ex_partition), id, bytes_of(name), bytes_of(topic), number, start};
}

bool HeldPartitions::hold(const ex_partition& p) {
  Entry& e = held_[p.id];
  if (++e.holders > 1) return false;
  e.part = Part{p.id, str(p.name), str(p.topic), p.number, p.start_offset};
  to_pause_.push_back(e.part);
  return true;
}

void HeldPartitions::release(int32_t id) {
  std::lock_guard<std::mutex> g(mu_);
  released_.push_back(id);
}

std::vector<HeldPartitions::Part> HeldPartitions::take_pauses() {
  return std::exchange(to_pause_, {});
}

std::vector<HeldPartitions::Part> HeldPartitions::take_resumes() {
  std::vector<int32_t> ids;
  {
    std::lock_guard<std::mutex> g(mu_);
    ids.swap(released_);
  }
  std::vector<Part> out;
  for (int32_t id : ids) {
    auto it = held_.find(id);
    if (it == held_.end()) continue;  // revoked meanwhile
    if (--it->second.holders > 0) continue;
    // Not yet paused at the source (released within the same poll): nothing to resume.
    auto queued = std::find_if(to_pause_.begin(), to_pause_.end(), [&](const Part& p) { return p.id == id; });
    if (queued != to_pause_.end()) to_pause_.erase(queued);
    else out.push_back(it->second.part);
    held_.erase(it);
  }
  return out;
}

void HeldPartitions::forget(int32_t id) {
  held_.erase(id);
  {
    // A release that raced the revocation must not count against a later hold of the
    // same partition (its stage would still be preparing it).
    std::lock_guard<std::mutex> g(mu_);
    released_.erase(std::remove(released_.begin(), released_.end(), id), released_.end());
  }
  to_pause_.erase(std::remove_if(to_pause_.begin(), to_pause_.end(), [&](const Part& p) { return p.id == id; }),
                  to_pause_.end());
}

void HeldPartitions::clear() {
  held_.clear();
  to_pause_.clear();
  std::lock_guard<std::mutex> g(mu_);
  released_.clear();
}

}  // namespace exactly::engine
