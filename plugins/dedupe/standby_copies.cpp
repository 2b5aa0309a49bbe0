// Standby copies (ABI 1.2): stores of partitions this instance does not own, kept
// current by tailing their changelog a slice at a time, so that when one is assigned
// here (its owner died or left) only the changelog's tail remains to restore.
#include "dedupe_transform.hpp"

#include <algorithm>
#include <set>

namespace exactly::dedupe {

using sdk::Status;

namespace {
std::string describe(const sdk::Partition& p) {
  return "'" + p.name + "' (id " + std::to_string(p.id) + ")";
}
}  // namespace

std::unique_ptr<PartitionStore> DedupeTransform::take_warm(const sdk::Partition& p) {
  auto it = warm_.find(p.id);
  if (it == warm_.end()) return nullptr;
  std::unique_ptr<PartitionStore> store;
  if (it->second.partition.name == p.name && !it->second.refused) store = std::move(it->second.store);
  host_.gauge("dedupe_standby_lag", 0, it->second.labels.c_str());
  warm_.erase(it);
  return store;
}

Status DedupeTransform::standby(const std::vector<sdk::Partition>& parts) {
  // Also the stage's once-a-second tick: a background restore that failed surfaces here
  // even when no record arrives.
  Status st = settle_restores();
  if (!st) return st;
  st = decide_changelog();
  if (!st) return st;
  if (!use_changelog_ || settings_.standby_budget_ms == 0) return Status::ok();

  std::set<int32_t> wanted;
  for (const auto& p : parts)
    if (!p.name.empty() && parts_.count(p.id) == 0) wanted.insert(p.id);
  for (auto it = warm_.begin(); it != warm_.end();) {
    if (wanted.count(it->first) != 0) {
      ++it;
      continue;
    }
    // Closed, not deleted: the files are a head start if it comes back.
    host_.gauge("dedupe_standby_lag", 0, it->second.labels.c_str());
    host_.info("dedupe: no longer keeping a standby copy of partition " +
               describe(it->second.partition));
    it = warm_.erase(it);
  }
  for (const auto& p : parts) {
    if (wanted.count(p.id) == 0 || warm_.count(p.id) != 0) continue;
    Warm w;
    w.partition = p;
    w.partition.start_offset = -1;
    w.labels = "partition=" + p.name;
    st = open_store(store_dir(p), p.id, false, w.store);
    if (!st) return st;
    host_.info("dedupe: keeping a standby copy of partition " + describe(p) + " in " +
               w.store->dir());
    warm_.emplace(p.id, std::move(w));
  }
  host_.gauge("dedupe_standby_partitions", static_cast<double>(warm_.size()));
  if (warm_.empty()) return Status::ok();

  // Round-robin under the budget, so that one far-behind copy cannot starve the others.
  const auto deadline = Clock::now() + std::chrono::milliseconds(settings_.standby_budget_ms);
  auto start = warm_.lower_bound(warm_next_);
  std::vector<Warm*> order;
  for (auto it = start; it != warm_.end(); ++it) order.push_back(&it->second);
  for (auto it = warm_.begin(); it != start; ++it) order.push_back(&it->second);
  for (Warm* w : order) {
    if (Clock::now() >= deadline) {
      warm_next_ = w->partition.id;
      return Status::ok();
    }
    st = catch_up(*w, deadline);
    if (!st) return st;
  }
  warm_next_ = 0;
  return Status::ok();
}

Status DedupeTransform::catch_up(Warm& w, Clock::time_point deadline) {
  if (w.refused) return Status::ok();
  sdk::StateInfo info;
  Status st = host_.state_open(changelog_topic_, w.partition, info);
  if (!st) return st;
  const StoreMeta& m = w.store->durable();
  int64_t from = m.changelog;
  if (from > info.end) return Status::ok();  // a re-created changelog: the restore on assignment decides
  if (from < 0) {
    if (!(m.fresh && m.next_seq == 0)) {
      // Claims kept without a changelog: the changelog is the truth now (as in a restore).
      w.store.reset();
      st = open_store(store_dir(w.partition), w.partition.id, true, w.store);
      if (!st) return st;
    }
    from = 0;
  }
  if (from < info.start) {
    w.refused = true;
    host_.warn("dedupe: no standby copy of partition " + describe(w.partition) + ": changelog " +
               changelog_topic_ + " starts at position " + std::to_string(info.start) +
               " but the copy needs it from " + std::to_string(from) +
               " (records were deleted from it); an assignment here decides per on.store.behind");
    return Status::ok();
  }
  if (from < info.end) {
    st = read_changelog(*w.store, w.partition, from, deadline);
    if (!st) return st;
  }
  const int64_t lag = std::max<int64_t>(0, info.end - w.store->durable().changelog);
  host_.gauge("dedupe_standby_lag", static_cast<double>(lag), w.labels.c_str());
  return Status::ok();
}

}  // namespace exactly::dedupe
