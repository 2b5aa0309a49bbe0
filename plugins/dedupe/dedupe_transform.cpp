#include "dedupe_transform.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <chrono>
#include <filesystem>
#include <system_error>

namespace exactly::dedupe {

using sdk::Status;

namespace {
int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string describe(const sdk::Partition& p) {
  return "'" + p.name + "' (id " + std::to_string(p.id) + ")";
}
}  // namespace

std::string store_dir_name(const std::string& name) {
  std::string out;
  bool changed = name.empty() || name == "." || name == "..";
  for (char c : name) {
    bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.';
    out.push_back(safe ? c : '_');
    changed |= !safe;
  }
  if (changed) {
    char h[17];
    std::snprintf(h, sizeof h, "%016llx",
                  static_cast<unsigned long long>(XXH3_64bits(name.data(), name.size())));
    out += (out.empty() ? "" : "-") + std::string(h);
  }
  return out;
}

DedupeTransform::DedupeTransform(sdk::Host host, const sdk::Config& config)
    : host_(host), settings_(Settings::parse(config)), ids_(settings_.id) {
  cache_ = rocksdb::NewLRUCache(settings_.block_cache_bytes);
}

DedupeTransform::~DedupeTransform() {
  // Unwritten claims die with the instance: the source replays them from the last
  // commit and they are claimed again.
  parts_.clear();
}

Status DedupeTransform::open_partition(const sdk::Partition& p, std::unique_ptr<Part>& out) {
  if (p.name.empty())
    return Status::fatal("dedupe: partition id " + std::to_string(p.id) +
                         " has no name; stores are kept by partition name");
  std::filesystem::path dir = std::filesystem::path(settings_.state_dir) / store_dir_name(p.name);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::fatal("dedupe: cannot create state directory " + dir.string() + ": " +
                         ec.message());
  auto part = std::make_unique<Part>();
  part->partition = p;
  part->labels = "partition=" + p.name;
  Status st = PartitionStore::open(dir.string(), settings_.tuning, cache_, part->store);
  if (!st) return st;

  const int64_t high = part->store->durable().high_water;
  if (p.start_offset >= 0 && p.start_offset > high + 1 + settings_.store_behind_tolerance) {
    std::string held = high < 0 ? "is empty (no claims)"
                                : "holds claims up to offset " + std::to_string(high);
    std::string msg = "dedupe: the store of partition " + describe(p) + " at " + dir.string() +
                      " is behind the committed position: it " + held +
                      ", but the source resumes at offset " + std::to_string(p.start_offset) +
                      ". Claims of offsets " + std::to_string(high + 1) + ".." +
                      std::to_string(p.start_offset - 1) +
                      " are missing, so later duplicates of those records would pass. "
                      "The store was deleted, or restored from an older copy. Fix: restore "
                      "the newest copy of that directory; or rebuild it from the output "
                      "topic with the kafka plugin's repair tool; or set on.store.behind: "
                      "ignore to go on and accept duplicates of the missing range.";
    switch (settings_.on_store_behind) {
      case BehindPolicy::fail:
        return Status::fatal(msg);
      case BehindPolicy::ignore:
        host_.warn("WARNING " + msg + " Going on because on.store.behind is ignore.");
        host_.counter("dedupe_store_behind_total", 1, part->labels.c_str());
        break;
    }
  }
  out = std::move(part);
  return Status::ok();
}

Status DedupeTransform::assign(const std::vector<sdk::Partition>& parts) {
  for (const auto& p : parts) {
    auto it = parts_.find(p.id);
    if (it != parts_.end()) {
      if (it->second->partition.name == p.name) continue;
      parts_.erase(it);
    }
    std::unique_ptr<Part> part;
    Status st = open_partition(p, part);
    if (!st) return st;
    host_.info("dedupe: opened store " + part->store->dir() + " for partition " + describe(p));
    report(*part, now_ms());
    parts_[p.id] = std::move(part);
  }
  return Status::ok();
}

Status DedupeTransform::revoke(const std::vector<sdk::Partition>& parts) {
  for (const auto& p : parts) {
    auto it = parts_.find(p.id);
    if (it == parts_.end()) continue;
    if (!it->second->store->round().empty())
      host_.warn("dedupe: partition " + describe(p) + " revoked with " +
                 std::to_string(it->second->store->round().size()) +
                 " claims of an uncommitted round; they are dropped and will be claimed "
                 "again on replay");
    host_.info("dedupe: closed store " + it->second->store->dir());
    parts_.erase(it);
  }
  return Status::ok();
}

Status DedupeTransform::process(const sdk::Batch& in, const sdk::Emitter& out) {
  const size_t n = in.size();
  if (n == 0) return Status::ok();
  items_.resize(n);
  keys_.clear();
  reasons_.clear();
  const uint32_t fp_bytes = settings_.fingerprint_bytes;

  // 1. Ids, hashes, fingerprints; every record's partition must be ours.
  Part* last = nullptr;
  int32_t last_id = 0;
  for (size_t i = 0; i < n; ++i) {
    const ex_record& r = in[i];
    Item& it = items_[i];
    if (last == nullptr || r.partition != last_id) {
      auto found = parts_.find(r.partition);
      if (found == parts_.end())
        return Status::fatal("dedupe: record at offset " + std::to_string(r.offset) +
                             " is from partition id " + std::to_string(r.partition) +
                             ", which is not assigned to this stage");
      last = found->second.get();
      last_id = r.partition;
    }
    it.part = last;
    it.lookup = -1;
    it.reject = -1;
    size_t pos = keys_.size();
    std::string reason;
    if (!ids_.extract(r, keys_, reason)) {
      it.reject = static_cast<int32_t>(reasons_.size());
      reasons_.push_back(std::move(reason));
      continue;
    }
    it.key_pos = static_cast<uint32_t>(pos);
    it.key_len = static_cast<uint32_t>(keys_.size() - pos);
    it.hash = XXH3_64bits(keys_.data() + pos, it.key_len);
    it.fingerprint = fp_bytes ? XXH3_64bits(r.value.ptr, r.value.len) : 0;
  }

  // 2. One MultiGet per partition for the ids this round has not claimed yet.
  for (auto& [id, part] : parts_) part->lookup_items.clear();
  for (size_t i = 0; i < n; ++i) {
    Item& it = items_[i];
    if (it.reject >= 0) continue;
    std::string_view key(keys_.data() + it.key_pos, it.key_len);
    PartitionStore& store = *it.part->store;
    if (store.round().find(key, it.hash) != nullptr) continue;
    const auto* u = store.find_unindexed(key, it.hash);
    if (u != nullptr && store.live(u->seq)) continue;
    it.part->lookup_items.push_back(static_cast<uint32_t>(i));
  }
  for (auto& [id, part] : parts_) {
    const size_t m = part->lookup_items.size();
    if (m == 0) continue;
    auto key_of = [&](size_t j) {
      const Item& it = items_[part->lookup_items[j]];
      return std::string_view(keys_.data() + it.key_pos, it.key_len);
    };
    const auto& order = part->order.sort(m, key_of);
    part->keys.clear();
    if (part->values.size() < m) part->values.resize(m);
    part->statuses.assign(m, rocksdb::Status());
    for (size_t j = 0; j < m; ++j) {
      Item& it = items_[part->lookup_items[order[j]]];
      it.lookup = static_cast<int32_t>(j);
      part->keys.emplace_back(keys_.data() + it.key_pos, it.key_len);
      part->values[j].Reset();
    }
    part->store->lookup(m, part->keys.data(), part->values.data(), part->statuses.data());
  }

  // 3. Decisions, in input order.
  for (size_t i = 0; i < n; ++i) {
    const ex_record& r = in[i];
    Item& it = items_[i];
    Part& part = *it.part;
    PartitionStore& store = *part.store;
    store.saw(r.offset);
    if (it.reject >= 0) {
      ++part.counts.id_errors;
      out.reject(i, reasons_[it.reject]);
      continue;
    }
    std::string_view key(keys_.data() + it.key_pos, it.key_len);
    bool found = false;
    int64_t owner = 0;
    uint64_t owner_fp = 0;
    uint32_t owner_fp_bytes = 0;
    const RoundClaims::Claim* c = store.round().find(key, it.hash);
    const uint32_t c_fp_bytes = c ? fp_bytes : store.unindexed_fp_bytes();
    if (c == nullptr) c = store.find_unindexed(key, it.hash);
    if (c != nullptr && store.live(c->seq)) {
      found = true;
      owner = c->offset;
      owner_fp = c->fingerprint;
      owner_fp_bytes = c_fp_bytes;
    } else if (it.lookup >= 0) {
      const rocksdb::Status& s = part.statuses[it.lookup];
      if (s.ok()) {
        ClaimValue v;
        const auto& val = part.values[it.lookup];
        if (!decode_claim(std::string_view(val.data(), val.size()), v))
          return Status::fatal("dedupe: store " + store.dir() + " holds an unreadable claim");
        if (store.live(v.seq)) {
          found = true;
          owner = v.offset;
          owner_fp = v.fingerprint;
          owner_fp_bytes = v.fingerprint_bytes;
        }
      } else if (!s.IsNotFound()) {
        return Status::fatal("dedupe: lookup in store " + store.dir() + " failed: " + s.ToString());
      }
    }
    if (!found) {
      store.claim(key, it.hash, r.offset, it.fingerprint);
      ++part.counts.claims;
      part.counts.claimed_key_bytes += key.size();
      out.keep(i);
    } else if (owner == r.offset) {
      ++part.counts.replays;
      out.keep(i);
    } else if (same_content(owner_fp, owner_fp_bytes, it.fingerprint, fp_bytes)) {
      ++part.counts.duplicates;
    } else {
      ++part.counts.conflicts;
      switch (settings_.on_conflict) {
        case ConflictPolicy::duplicate:
          ++part.counts.duplicates;
          break;
        case ConflictPolicy::reject:
          out.reject(i, "dedupe conflict: id already claimed by offset " + std::to_string(owner) +
                            " with different content");
          break;
        case ConflictPolicy::stop:
          flush_counts(part);
          return Status::fatal("dedupe conflict in partition " + describe(part.partition) +
                               " at offset " + std::to_string(r.offset) +
                               ": the id was claimed by offset " + std::to_string(owner) +
                               " with different content (on.conflict: stop)");
      }
    }
  }
  for (auto& [id, part] : parts_) flush_counts(*part);
  return Status::ok();
}

void DedupeTransform::flush_counts(Part& p) {
  Counts& c = p.counts;
  const char* l = p.labels.c_str();
  if (c.claims) host_.counter("dedupe_claims_total", static_cast<double>(c.claims), l);
  if (c.claimed_key_bytes)
    host_.counter("dedupe_claimed_key_bytes_total", static_cast<double>(c.claimed_key_bytes), l);
  if (c.replays) host_.counter("dedupe_replays_total", static_cast<double>(c.replays), l);
  if (c.duplicates) host_.counter("dedupe_duplicates_total", static_cast<double>(c.duplicates), l);
  if (c.conflicts) host_.counter("dedupe_conflicts_total", static_cast<double>(c.conflicts), l);
  if (c.id_errors) host_.counter("dedupe_id_errors_total", static_cast<double>(c.id_errors), l);
  c = Counts{};
}

void DedupeTransform::report(Part& p, int64_t now) {
  StoreGauges g = p.store->gauges(now);
  const char* l = p.labels.c_str();
  host_.gauge("dedupe_store_keys", g.keys, l);
  host_.gauge("dedupe_store_bytes", g.bytes, l);
  host_.gauge("dedupe_window_seconds", g.window_seconds, l);
}

Status DedupeTransform::prepare_commit() {
  const int64_t now = now_ms();
  for (auto& [id, part] : parts_) {
    Status st = part->store->write_round(settings_.retention, settings_.fingerprint_bytes, now);
    if (!st) return st;
    report(*part, now);
  }
  return Status::ok();
}

Status DedupeTransform::commit() { return Status::ok(); }

Status DedupeTransform::abort() {
  for (auto& [id, part] : parts_) part->store->drop_round();
  return Status::ok();
}

Status DedupeTransform::reconfigure(const sdk::Config& config) {
  Settings next = Settings::parse(config);
  std::string what;
  if (!same_store_layout(settings_, next, what)) return Status::unsupported(what);
  settings_.retention = next.retention;
  settings_.on_conflict = next.on_conflict;
  settings_.on_store_behind = next.on_store_behind;
  settings_.store_behind_tolerance = next.store_behind_tolerance;
  host_.info("dedupe: retention and policies changed in place");
  return Status::ok();
}

}  // namespace exactly::dedupe
