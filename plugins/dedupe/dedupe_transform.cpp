#include "dedupe_transform.hpp"

#include "unlogged_claims.hpp"

#include <map>
#include <mutex>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <exactly/durable_file.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <thread>

#include "changelog_codec.hpp"
#include "side_by_side.hpp"
#include "stage_line.hpp"

namespace exactly::dedupe {

using sdk::Status;

namespace {

// Fold starts and adoptions per round, over all of an instance's partitions (see
// PartitionStore::apply_round): partitions that reach the threshold together take their
// turns in consecutive rounds instead of stalling one round with all of them.
constexpr int kFoldStepsPerRound = 1;
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

namespace {
std::string default_changelog_topic(const std::string& pipeline, const std::string& stage) {
  std::string out = "exactly-" + pipeline + "-" + stage + "-changelog";
  std::string clean;
  for (char c : out) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    char x = ok ? c : '-';
    if (x == '-' && !clean.empty() && clean.back() == '-') continue;
    clean.push_back(x);
  }
  if (clean.size() > 249) clean.resize(249);
  return clean;
}
}  // namespace

namespace {
// The instances of one stage on a pipeline's task threads (`threads:`) share one block
// cache, so rocksdb.block.cache bounds the stage, not each of its tasks.
std::shared_ptr<rocksdb::Cache> shared_cache(const std::string& state_dir, size_t bytes) {
  static std::mutex mu;
  static auto* caches = new std::map<std::string, std::weak_ptr<rocksdb::Cache>>;
  std::lock_guard<std::mutex> g(mu);
  auto& slot = (*caches)[state_dir];
  auto cache = slot.lock();
  if (!cache || cache->GetCapacity() != bytes) {
    cache = rocksdb::NewLRUCache(bytes);
    slot = cache;
  }
  return cache;
}
}  // namespace

DedupeTransform::DedupeTransform(sdk::Host host, const sdk::Config& config)
    : host_(host), settings_(Settings::parse(config)), ids_(settings_.id) {
  Status st = lock_.acquire(settings_.state_dir, ".exactly-lock",
                            std::string("pipeline '") + host_.pipeline() + "' stage " +
                                host_.component_id());
  if (!st) throw sdk::ConfigError("state.dir", "dedupe: " + st.message());
  cache_ = shared_cache(settings_.state_dir, settings_.block_cache_bytes);
  changelog_topic_ = settings_.changelog_topic.empty()
                         ? default_changelog_topic(host_.pipeline(), host_.component_id())
                         : settings_.changelog_topic;
}

sdk::Status DedupeTransform::validate(const sdk::Config& config) {
  Settings::parse(config);
  return sdk::Status::ok();
}

DedupeTransform::~DedupeTransform() {
  // Unwritten claims die with the instance: the source replays them from the last
  // commit and they are claimed again.
  for (auto& [id, part] : parts_) stop_restore(*part);
  parts_.clear();
  warm_.clear();
}

Status DedupeTransform::open_store(const std::string& dir, int32_t id, bool wipe,
                                   std::unique_ptr<PartitionStore>& out, bool* damaged) {
  out.reset();
  if (wipe) {
    Status st = PartitionStore::destroy(dir);
    if (!st) return st;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::fatal("dedupe: cannot create state directory " + dir + ": " + ec.message());
  Status st = PartitionStore::open(dir, settings_.tuning, cache_, static_cast<uint32_t>(id), out, damaged);
  if (!st || !use_changelog_) return st;
  return out->set_changelog_backed(true);
}

// Kafka Streams wipes a corrupted task's state and restores it from its changelog; so
// does this, with the damaged store kept aside for inspection rather than deleted. Only
// where the changelog really is kept for this partition (a file sink keeps none: there
// the store is the only copy, and it is refused as before), and not when the store was
// set aside less than an hour ago already (kept on disk, so a restarted host knows it
// too): a store damaged again right after its restore (a failing disk) is refused rather
// than moved aside in a loop that fills the disk with copies. The restore that follows
// makes the usual checks: a changelog behind the group's offsets is refused by
// on.store.behind.
Status DedupeTransform::set_aside_damaged(const sdk::Partition& p, const Status& why) {
  if (settings_.on_store_damaged != DamagedPolicy::restore) return why;
  if (!decide_changelog() || !use_changelog_) return why;
  sdk::StateInfo info;
  if (!open_changelog(p, info)) return why;
  namespace fs = std::filesystem;
  const fs::path dir = store_dir(p);
  const std::string prefix = dir.filename().string() + ".damaged-";
  const std::time_t now = std::time(nullptr);
  std::error_code ec;
  for (fs::directory_iterator it(dir.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    std::tm tm{};
    if (std::sscanf(name.c_str() + prefix.size(), "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
      continue;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    const std::time_t at = timegm(&tm);
    if (now - at < 3600)
      return Status::fatal(why.message() + " (an earlier copy of it was set aside as " + it->path().string() +
                           " less than an hour ago and the partition restored from changelog " +
                           changelog_topic_ + ": damaged again so soon, it is refused, not set aside " +
                           "again; check the disk)");
  }
  char stamp[32];
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  const fs::path aside = dir.parent_path() / (prefix + stamp);
  fs::rename(dir, aside, ec);
  if (ec)
    return Status::fatal(why.message() + " (moving it aside to " + aside.string() + " failed: " + ec.message() + ")");
  // The reason is a store error, already led by "dedupe: ".
  const std::string& reason = why.message();
  host_.warn((reason.rfind("dedupe: ", 0) == 0 ? reason : "dedupe: " + reason) +
             ". on.store.damaged is restore: the store is moved to " +
             aside.string() + " and partition " + describe(p) + " is restored from changelog " +
             changelog_topic_ + " (remove " + aside.string() + " once it is not needed)");
  host_.counter("dedupe_stores_set_aside_total", 1, ("partition=" + p.name).c_str());
  return Status::ok();
}

int64_t DedupeTransform::covered_by(const StoreMeta& m) {
  // The source position the store's last round read up to (records dropped upstream
  // included), or for stores written before positions, its highest claim + 1.
  return m.position >= 0 ? m.position : m.high_water + 1;
}

bool DedupeTransform::is_behind(const StoreMeta& m, int64_t start_offset) const {
  return start_offset > 0 && start_offset > covered_by(m) + settings_.store_behind_tolerance;
}

Status DedupeTransform::behind(Part& part, const std::string& what) {
  std::string msg = "dedupe: partition " + describe(part.partition) + ": " + what;
  switch (settings_.on_store_behind) {
    case BehindPolicy::fail:
      return Status::fatal(msg);
    case BehindPolicy::ignore:
      host_.warn("WARNING " + msg + " Going on because on.store.behind is ignore.");
      host_.counter("dedupe_store_behind_total", 1, part.labels.c_str());
      return Status::ok();
  }
  return Status::ok();
}

Status DedupeTransform::read_changelog(PartitionStore& store, const sdk::Partition& p,
                                       int64_t from, Clock::time_point deadline,
                                       const std::atomic<bool>* cancel) {
  const std::string& name = p.name;
  const bool bounded = deadline != Clock::time_point::max();
  Status failure;
  bool out_of_time = false;
  int64_t last = from - 1;
  sdk::StateRecordFn fn = [&](int64_t pos, ex_bytes k, ex_bytes v) {
    last = pos;
    ChangelogKey key;
    if (!parse_changelog_key(sdk::view(k), name, key)) return true;  // another partition's
    Status st;
    if (key.kind == ChangelogKind::meta) {
      if (v.ptr != nullptr) st = store.restore_meta(sdk::view(v));
    } else if (v.ptr == nullptr) {
      st = store.restore_tombstone(key.seq);
    } else {
      st = store.restore_chunk(key.seq, sdk::view(v));
    }
    if (!st) {
      failure = st;
      return false;
    }
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      failure = Status::fatal("dedupe: restore of partition " + describe(p) + " cancelled");
      return false;
    }
    // A round ends with its meta record: stopping there leaves a consistent store.
    if (bounded && key.kind == ChangelogKind::meta && Clock::now() >= deadline) {
      out_of_time = true;
      return false;
    }
    return true;
  };
  Status st = host_.state_read(changelog_topic_, p, from, fn);
  if (!failure.is_ok()) return failure;
  if (!st && !out_of_time) return st;
  // Only as far as records were actually read: `info.end` may be the high watermark,
  // past a previous owner's transaction that is still completing and will commit.
  // A bounded read is a standby copy's catch-up (see finish_restore).
  return store.finish_restore(std::max(from, last + 1), !bounded);
}

namespace {
constexpr const char* kChangelogNameFile = "CHANGELOG_TOPIC";
}  // namespace

Status DedupeTransform::check_changelog_name(const Part& part) {
  namespace fs = std::filesystem;
  const fs::path file = fs::path(part.store->dir()) / kChangelogNameFile;
  std::string kept;
  {
    std::ifstream in(file);
    if (in) std::getline(in, kept);
  }
  if (!kept.empty() && kept != changelog_topic_)
    return Status::error(
        EX_ERR_CONFIG,
        "dedupe: store " + part.store->dir() + " holds the claims of changelog " + kept +
            ", but this stage's changelog is " + changelog_topic_ +
            " (its default name, exactly-<pipeline>-<stage>-changelog, changes when the stage "
            "moves in the chain or the pipeline is renamed). Set changelog.topic: " + kept +
            " on this stage to keep its claims; to start it over on the new changelog instead "
            "(ids it has seen pass again), remove the store directory " + part.store->dir() +
            " and set on.store.behind: ignore (the group's offsets are past the new, empty "
            "changelog, which is refused otherwise)",
        "changelog.topic");
  if (kept.empty()) return sdk::replace_file_atomically(file.string(), changelog_topic_ + "\n");
  return Status::ok();
}

Status DedupeTransform::restore(Part& part, const std::atomic<bool>* cancel) {
  const sdk::Partition& p = part.partition;
  const std::string dir = part.store->dir();
  sdk::StateInfo info;
  Status st = open_changelog(p, info);
  if (!st) return st;
  // Only once the sink keeps changelogs: with changelog: auto beside a file sink the name
  // was recorded, and a renamed pipeline was refused for a changelog it never had (QA).
  st = check_changelog_name(part);
  if (!st) return st;
  const StoreMeta& m = part.store->durable();
  const bool local_empty = m.fresh && m.next_seq == 0;
  int64_t from = m.changelog;
  // Right after this host's own commit the committed end may lag the position it
  // recorded for a moment (transaction markers are written after the commit returns):
  // only a store still ahead after that is ahead of a re-created changelog.
  const auto settle = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (from > info.end && std::chrono::steady_clock::now() < settle) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    st = open_changelog(p, info);
    if (!st) return st;
  }
  // Claims this store made without a changelog (a store kept from before
  // UNLOGGED_SINCE existed: any claim of a store that never had one).
  const std::optional<uint64_t> marked = unlogged_since(dir);
  const uint64_t unlogged_from = marked ? *marked : (from < 0 && !local_empty ? 0 : m.next_seq);
  const uint64_t unlogged_end = m.next_seq;
  bool wipe = false;
  if (from > info.end && p.start_offset < 0) {
    // Re-created along with the group's offsets: the pipeline starts over.
    host_.warn("dedupe: store " + dir + " has applied changelog " + changelog_topic_ +
               " up to position " + std::to_string(from) + " but the changelog ends at " +
               std::to_string(info.end) + " (it was re-created, and the group has no committed " +
               "offsets: starting over); rebuilding the store from it");
    wipe = true;
  } else if (from > info.end) {
    // Re-created while the group kept its offsets: this store is the only copy left of the
    // partition's claims. Wiping it (as before) let every id seen before through again.
    st = behind(part, "the store at " + dir + " has applied changelog " + changelog_topic_ +
                          " up to position " + std::to_string(from) + ", but the changelog ends at " +
                          std::to_string(info.end) + ": it was deleted and re-created while the "
                          "group kept its offsets (it resumes at " + std::to_string(p.start_offset) +
                          "), so the claims it held are gone from the cluster. This store still holds "
                          "them, and is kept. Fix: set on.store.behind: ignore to go on with this "
                          "store (it follows the new changelog from its end; a host that restores "
                          "the partition from that changelog alone would miss the older claims and "
                          "let duplicates of those ids through), or restore the changelog topic.");
    if (!st) return st;
    st = part.store->follow_new_changelog(info.end);
    if (!st) return st;
    from = info.end;
  } else if (from < 0 && !local_empty && info.end > info.start) {
    // A store kept without a changelog: the changelog is the truth now.
    wipe = true;
  } else if (from < 0 && !local_empty) {
    // Turning the changelog on for a store that has only been local: keep it.
    from = info.end;
  }
  if (wipe) {
    part.store.reset();
    st = open_store(dir, part.partition.id, true, part.store);
    if (!st) return st;
    from = -1;
  }
  if (from < 0) from = 0;  // an empty store needs the changelog from its very start
  if (from < info.start) {
    return behind(part, "changelog " + changelog_topic_ + " starts at position " +
                            std::to_string(info.start) + ", but the store needs it from " +
                            std::to_string(from) + ": records were deleted from the changelog "
                            "(cleanup.policy delete, or kafka-delete-records), so the claims in "
                            "them are lost. Fix: set on.store.behind: ignore to accept "
                            "duplicates of those ids, or restore the store directory from a "
                            "copy.");
  }
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t claims_before = part.store->restored_claims();
  if (from < info.end) {
    // One position past the store is the commit marker of its own last round.
    if (info.end - from > 1)
      host_.info("dedupe: restoring partition " + describe(p) + " from changelog " +
                 changelog_topic_ + " positions " + std::to_string(from) + ".." +
                 std::to_string(info.end));
    host_.gauge("dedupe_restore_remaining", static_cast<double>(info.end - from), part.labels.c_str());
    st = read_changelog(*part.store, p, from, Clock::time_point::max(), cancel);
    if (!st) return st;
  } else {
    st = part.store->finish_restore(info.end);
    if (!st) return st;
  }
  // The changelog is committed in the same transaction as the group's offsets; a
  // previous owner's last transaction may still be writing its markers, so give the
  // changelog a moment to reach the committed offset before calling it behind.
  const auto deadline = t0 + std::chrono::milliseconds(settings_.changelog_catch_up_ms);
  while (is_behind(part.store->durable(), p.start_offset) &&
         std::chrono::steady_clock::now() < deadline) {
    if (cancel != nullptr && cancel->load()) return Status::fatal("dedupe: restore cancelled");
    // A stop (or a reload draining this pipeline) does not wait out the catch-up: it held
    // a SIGTERM for up to changelog.catch.up.timeout, and past shutdown.timeout the host
    // exited 3 (QA). The next owner restores the partition again.
    if (host_.stopping())
      return Status::retriable("dedupe: stopped while partition " + describe(p) +
                               " waited for changelog " + changelog_topic_ + " to catch up");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    st = open_changelog(p, info);
    if (!st) return st;
    if (info.end > part.store->durable().changelog) {
      st = read_changelog(*part.store, p, part.store->durable().changelog, Clock::time_point::max(), cancel);
      if (!st) return st;
    }
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const uint64_t restored = part.store->restored_claims() - claims_before;
  host_.gauge("dedupe_restore_remaining", 0, part.labels.c_str());
  if (restored > 0) {
    host_.counter("dedupe_restored_claims_total", static_cast<double>(restored), part.labels.c_str());
    host_.counter("dedupe_restores_total", 1, part.labels.c_str());
    host_.info("dedupe: restored partition " + describe(p) + ": " + std::to_string(restored) +
               " claims in " + std::to_string(secs) + " s");
  }
  if (!wipe && unlogged_end > unlogged_from)
    host_.warn("dedupe: store " + dir + " holds claims made while its changelog was off "
               "(sequence numbers " + std::to_string(unlogged_from) + ".." + std::to_string(unlogged_end - 1) +
               "): changelog " + changelog_topic_ + " lacks them, so a host that restores partition " +
               describe(p) + " from it (the partition moved, or this store was lost) lets "
               "duplicates of those ids through until they leave the window; this store keeps "
               "them while it lives");
  if (marked) clear_unlogged(dir);
  const StoreMeta& now = part.store->durable();
  if (is_behind(now, p.start_offset)) {
    if (now.position >= 0)
      return behind(part, "changelog " + changelog_topic_ + " covers the input up to offset " +
                              std::to_string(now.position) + ", but the group resumes at " +
                              std::to_string(p.start_offset) + " (waited " +
                              std::to_string(settings_.changelog_catch_up_ms) +
                              " ms for it to catch up). Rounds are missing from the changelog: "
                              "it was truncated or re-created. Later duplicates of ids in the "
                              "missing range would pass; set on.store.behind: ignore to accept "
                              "that.");
    return behind(part, "changelog " + changelog_topic_ + " holds no state for this "
                              "partition, but the group resumes at offset " +
                              std::to_string(p.start_offset) +
                              ": the pipeline ran before without a changelog (or it was "
                              "deleted). Claims made then are missing, so later duplicates of "
                              "those ids would pass. Fix: run the partition once on the host "
                              "that holds its old store, or set on.store.behind: ignore.");
  }
  return Status::ok();
}

std::string DedupeTransform::store_dir(const sdk::Partition& p) const {
  return (std::filesystem::path(settings_.state_dir) / store_dir_name(p.name)).string();
}

Status DedupeTransform::decide_changelog() {
  if (changelog_decided_) return Status::ok();
  changelog_decided_ = true;
  use_changelog_ = settings_.changelog != ChangelogMode::off && host_.state_supported();
  if (settings_.changelog == ChangelogMode::on && !use_changelog_) return no_changelog_sink();
  return Status::ok();
}

Status DedupeTransform::no_changelog_sink() {
  return Status::config("changelog", "dedupe: changelog: on, but the pipeline's sink keeps "
                                     "no state changelogs (use the kafka sink, or changelog: off)");
}

// A host with state calls whose sink keeps no changelogs (the file sink) answers them
// "unsupported". With changelog: on that is this config's problem, not a failure to retry
// (the pipeline restarted into it for ever); with auto, open_partition goes without one.
Status DedupeTransform::open_changelog(const sdk::Partition& p, sdk::StateInfo& info) {
  Status st = host_.state_open(changelog_topic_, p, info);
  if (st.code() == EX_ERR_UNSUPPORTED && settings_.changelog == ChangelogMode::on) return no_changelog_sink();
  return st;
}

Status DedupeTransform::open_partition(const sdk::Partition& p, std::unique_ptr<Part>& out,
                                       std::unique_ptr<PartitionStore> ready) {
  if (p.name.empty())
    return Status::fatal("dedupe: partition id " + std::to_string(p.id) +
                         " has no name; stores are kept by partition name");
  std::filesystem::path dir = store_dir(p);
  auto part = std::make_unique<Part>();
  part->partition = p;
  part->labels = "partition=" + p.name;
  // Decided first: a store that rests on the changelog is opened to write without a WAL.
  Status st = decide_changelog();
  if (!st) return st;
  if (ready) {
    part->store = std::move(ready);
    // Opened before an earlier partition of this assignment found no changelog (auto).
    st = part->store->set_changelog_backed(use_changelog_);
    if (!st) return st;
  } else {
    bool damaged = false;
    st = open_store(dir.string(), p.id, false, part->store, &damaged);
    if (!st && damaged) {
      Status aside = set_aside_damaged(p, st);
      st = aside ? open_store(dir.string(), p.id, false, part->store) : aside;
    }
    if (!st) return st;
  }

  if (use_changelog_) {
    // A long restore runs in its own thread while the host holds only this partition
    // back; a short one (or a host that cannot hold) restores here.
    if (restore_backlog(*part) > kBackgroundRestorePositions && host_.hold(p)) {
      start_background_restore(*part);
      out = std::move(part);
      return Status::ok();
    }
    st = restore(*part);
    if (st.code() == EX_ERR_UNSUPPORTED && settings_.changelog == ChangelogMode::auto_) {
      host_.info("dedupe: no changelog (" + st.message() + "); stores are local to this host");
      use_changelog_ = false;
      st = part->store->set_changelog_backed(false);  // its own WAL from now on
      if (!st) return st;
    } else if (!st) {
      return st;
    } else {
      out = std::move(part);
      return Status::ok();
    }
  }

  // Claims made from here on reach no changelog (unlogged_claims.hpp).
  st = mark_unlogged(part->store->dir(), part->store->durable().next_seq);
  if (!st) return st;
  const StoreMeta& m = part->store->durable();
  if (is_behind(m, p.start_offset)) {
    const int64_t covered = covered_by(m);
    const int64_t high = m.high_water;
    std::string held = high < 0 && m.position < 0 ? "is empty (no claims)"
                                                  : "has seen the input up to offset " + std::to_string(covered - 1);
    st = behind(*part, "the store at " + dir.string() + " is behind the committed position: it " +
                           held + ", but the source resumes at offset " +
                           std::to_string(p.start_offset) + ". Claims of offsets " +
                           std::to_string(covered) + ".." + std::to_string(p.start_offset - 1) +
                           " are missing, so later duplicates of those records would pass. "
                           "The store was deleted, restored from an older copy, or the "
                           "partition moved here from another host. Fix: restore the newest "
                           "copy of that directory, or set on.store.behind: ignore to go on "
                           "and accept duplicates of the missing range. So that stores follow "
                           "their partitions from then on, keep a changelog (changelog: auto "
                           "with the kafka sink).");
    if (!st) return st;
  }
  out = std::move(part);
  return Status::ok();
}

Status DedupeTransform::assign(const std::vector<sdk::Partition>& parts) {
  Status settled = settle_restores();
  if (!settled) return settled;
  std::vector<const sdk::Partition*> todo;
  std::vector<std::unique_ptr<PartitionStore>> ready;  // by todo's index
  std::vector<bool> warm;
  for (const auto& p : parts) {
    auto it = parts_.find(p.id);
    if (it != parts_.end()) {
      if (it->second->partition.name == p.name) continue;
      stop_restore(*it->second);
      parts_.erase(it);
    }
    todo.push_back(&p);
    ready.push_back(take_warm(p));
    warm.push_back(ready.back() != nullptr);
  }
  std::vector<Status> opened(todo.size());
  std::vector<char> damaged(todo.size(), 0);
  Status st = open_stores_side_by_side(todo, ready, opened, damaged);
  if (!st) return st;
  for (size_t i = 0; i < todo.size(); ++i) {
    const sdk::Partition& p = *todo[i];
    // Opened again, alone, by open_partition below.
    if (!opened[i] && damaged[i]) opened[i] = set_aside_damaged(p, opened[i]);
    if (!opened[i]) return opened[i];  // in assignment order: the first failing one is named
    std::unique_ptr<Part> part;
    st = open_partition(p, part, std::move(ready[i]));
    if (!st) return st;
    host_.info("dedupe: opened store " + part->store->dir() + " for partition " + describe(p) +
               (warm[i] ? " (from its standby copy)" : "") +
               (part->restoring ? "; restoring it in the background" : ""));
    if (!part->restoring) {
      find_rewind(*part);
      report(*part, now_ms());
    }
    parts_[p.id] = std::move(part);
  }
  return Status::ok();
}

// A store's open is mostly fsyncs (10-17 ms for a new one here): one after another, the
// stores of an assignment held its first records (a new pipeline's, a rebalance's
// takeover) for their sum, 50 ms for four partitions, linear in the partitions. Only the
// local opens run side by side, on threads of this call; the changelog calls that follow
// (open_partition) stay on the pipeline thread, in assignment order. Each open's outcome
// goes to `opened`, which assign() reports in that order.
Status DedupeTransform::open_stores_side_by_side(const std::vector<const sdk::Partition*>& todo,
                                                 std::vector<std::unique_ptr<PartitionStore>>& ready,
                                                 std::vector<Status>& opened, std::vector<char>& damaged) {
  std::vector<size_t> opens;
  for (size_t i = 0; i < todo.size(); ++i)
    if (!ready[i] && !todo[i]->name.empty()) opens.push_back(i);
  if (opens.size() < 2) return Status::ok();
  // Decided before any open: a store that rests on the changelog has no WAL.
  Status st = decide_changelog();
  if (!st) return st;
  const auto t0 = Clock::now();
  run_side_by_side(opens.size(), kSideBySideOpens, [&](size_t k) {
    const size_t i = opens[k];
    try {
      bool bad = false;
      opened[i] = open_store(store_dir(*todo[i]), todo[i]->id, false, ready[i], &bad);
      damaged[i] = bad;
    } catch (const std::exception& e) {
      opened[i] = Status::fatal("dedupe: cannot open store " + store_dir(*todo[i]) + ": " + e.what());
    }
    if (!opened[i]) ready[i].reset();
  });
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  host_.info("dedupe: opened " + std::to_string(opens.size()) + " stores side by side in " +
             std::to_string(ms) + " ms");
  return Status::ok();
}

Status DedupeTransform::revoke(const std::vector<sdk::Partition>& parts) {
  for (const auto& p : parts) {
    auto it = parts_.find(p.id);
    if (it == parts_.end()) continue;
    stop_restore(*it->second);
    if (it->second->store->round_size() > 0)
      host_.warn("dedupe: partition " + describe(p) + " revoked with " +
                 std::to_string(it->second->store->round_size()) +
                 " claims of an uncommitted round; they are dropped and will be claimed "
                 "again on replay");
    host_.info("dedupe: closed store " + it->second->store->dir());
    parts_.erase(it);
  }
  return Status::ok();
}

Status DedupeTransform::process(const sdk::Batch& in, const sdk::Emitter& out) {
  Status settled = settle_restores();
  if (!settled) return settled;
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
      if (last->restoring)
        return Status::fatal("dedupe: record at offset " + std::to_string(r.offset) +
                             " of partition " + describe(last->partition) +
                             ", which is held back while its store restores");
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
    it.key_pos = pos;
    it.key_len = static_cast<uint32_t>(keys_.size() - pos);
    it.hash = XXH3_64bits(keys_.data() + pos, it.key_len);
    it.fingerprint = fp_bytes ? XXH3_64bits(r.value.ptr, r.value.len) : 0;
    ++last->batch_ids;
    last->batch_key_bytes += it.key_len;
  }
  // The batch's claims go into the table that step 2 returns pointers into: room for all
  // of them first, so that none moves it.
  for (auto& [id, part] : parts_) {
    if (part->batch_ids == 0) continue;
    part->store->reserve_round(part->batch_ids, part->batch_key_bytes);
    part->batch_ids = part->batch_key_bytes = 0;
  }

  // 2. One lookup per partition for the ids this round has not claimed yet.
  for (auto& [id, part] : parts_) part->lookup_items.clear();
  // The tables and the filter are far larger than the caches and each check is a miss:
  // records a few places ahead start loading theirs while this one is checked.
  // No lambda or helper that GCC could analyse on its own: it took one whose only effect
  // is a prefetch for a pure function and dropped every call to it as dead (GCC 12, -O2
  // and -O3: no prefetch was left in this function; the helpers are always_inline too).
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < kAhead && i < n; ++i)
    if (items_[i].reject < 0) items_[i].part->store->prefetch(items_[i].hash);
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n && items_[i + kAhead].reject < 0)
      items_[i + kAhead].part->store->prefetch(items_[i + kAhead].hash);
    Item& it = items_[i];
    it.unindexed = nullptr;
    if (it.reject >= 0) continue;
    std::string_view key(keys_.data() + it.key_pos, it.key_len);
    PartitionStore& store = *it.part->store;
    const auto* u = it.unindexed = store.find_unindexed(key, it.hash);
    if (u != nullptr && store.live(u->seq)) continue;
    if (!store.may_be_stored(it.hash)) {  // a new id: no read of the store's files at all
      ++it.part->counts.lookups_skipped;
      continue;
    }
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
    part->hashes.clear();
    if (part->values.size() < m) part->values.resize(m);
    part->statuses.assign(m, rocksdb::Status());
    for (size_t j = 0; j < m; ++j) {
      Item& it = items_[part->lookup_items[order[j]]];
      it.lookup = static_cast<int32_t>(j);
      part->keys.emplace_back(keys_.data() + it.key_pos, it.key_len);
      part->hashes.push_back(it.hash);
      part->values[j].Reset();
    }
    part->store->lookup(m, part->keys.data(), part->hashes.data(), part->values.data(),
                        part->statuses.data());
  }

  // 3. Decisions, in input order.
  std::fill(claimed_bits_.begin(), claimed_bits_.end(), 0);
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
    const size_t bit = claimed_bit(it.hash);
    const bool claimed_before = (claimed_bits_[bit / 64] >> (bit % 64)) & 1;
    // Only an id whose bit an earlier claim of this batch set can have been claimed
    // since step 2 looked; the others keep that answer.
    const RoundClaims::Claim* c = claimed_before ? store.find_unindexed(key, it.hash) : it.unindexed;
    const uint32_t c_fp_bytes = store.unindexed_fp_bytes();
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
          return PartitionStore::mark_damaged(store.dir(), "dedupe: store " + store.dir() + " holds an unreadable claim");
        if (store.live(v.seq)) {
          found = true;
          owner = v.offset;
          owner_fp = v.fingerprint;
          owner_fp_bytes = v.fingerprint_bytes;
        }
      } else if (s.IsCorruption()) {
        return PartitionStore::mark_damaged(store.dir(), "dedupe: lookup in store " + store.dir() + " failed: " + s.ToString());
      } else if (!s.IsNotFound()) {
        return Status::fatal("dedupe: lookup in store " + store.dir() + " failed: " + s.ToString());
      }
    }
    if (!found) {
      store.claim(key, it.hash, r.offset, it.fingerprint, fp_bytes);
      claimed_bits_[bit / 64] |= uint64_t{1} << (bit % 64);
      ++part.counts.claims;
      part.counts.claimed_key_bytes += key.size();
      out.keep(i);
    } else if (owner == r.offset && r.offset >= part.replays_from) {
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
          // A config-class error: the pipeline stops for good instead of being rebuilt
          // into the same conflict forever.
          return Status::config("on.conflict", "dedupe conflict in partition " + describe(part.partition) +
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
  if (c.lookups_skipped)
    host_.counter("dedupe_lookups_skipped_total", static_cast<double>(c.lookups_skipped), l);
  c = Counts{};
}

void DedupeTransform::report(Part& p, int64_t now) {
  StoreGauges g = p.store->gauges(now);
  const char* l = p.labels.c_str();
  host_.gauge("dedupe_store_keys", g.keys, l);
  host_.gauge("dedupe_store_bytes", g.bytes, l);
  host_.gauge("dedupe_window_seconds", g.window_seconds, l);
  host_.gauge("dedupe_store_compacting", g.compacting, l);
  auto cpu = p.store->take_background_cpu();
  if (cpu.fold > 0) host_.counter("dedupe_fold_cpu_seconds_total", cpu.fold, l);
  if (cpu.filter_build > 0)
    host_.counter("dedupe_filter_build_cpu_seconds_total", cpu.filter_build, l);
  if (cpu.folds_raised > 0)
    host_.counter("dedupe_fold_raised_total", static_cast<double>(cpu.folds_raised), l);
  if (uint64_t n = p.store->take_synced_writes())
    host_.counter("dedupe_store_synced_writes_total", static_cast<double>(n), l);
  if (cpu.merge > 0) host_.counter("dedupe_merge_cpu_seconds_total", cpu.merge, l);
  if (cpu.merges > 0) {
    host_.counter("dedupe_merges_total", static_cast<double>(cpu.merges), l);
    // Rare (one per min(claims.files.max / 2, 16) folds past the limit): worth a line.
    host_.info("dedupe: store " + p.store->dir() + " merged claims files (" +
               std::to_string(cpu.merges) + " merge(s) adopted)");
  }
}

Status DedupeTransform::positions(const std::vector<sdk::Partition>& parts) {
  for (const auto& p : parts) {
    auto it = parts_.find(p.id);
    if (it != parts_.end() && !it->second->restoring) it->second->store->read_up_to(p.start_offset);
  }
  return Status::ok();
}

Status DedupeTransform::write_changelog(Part& part, const PartitionStore::RoundPlan& plan) {
  const std::string& name = part.partition.name;
  for (uint64_t seq : plan.evicted) {
    std::string k = changelog_key(name, ChangelogKind::chunk, seq);
    Status st = host_.state_write(changelog_topic_, part.partition, sdk::bytes(k), sdk::null_bytes());
    if (!st) return st;
  }
  for (const auto& [seq, chunk] : plan.chunks) {
    std::string k = changelog_key(name, ChangelogKind::chunk, seq);
    Status st = host_.state_write(changelog_topic_, part.partition, sdk::bytes(k), sdk::bytes(chunk));
    if (!st) return st;
  }
  std::string k = changelog_key(name, ChangelogKind::meta);
  StoreMeta logged = plan.next;
  logged.newest_file = 0;  // this store's files: a copy restored from it has its own
  std::string v = logged.encode();
  return host_.state_write(changelog_topic_, part.partition, sdk::bytes(k), sdk::bytes(v));
}

Status DedupeTransform::prepare_commit() {
  // Before anything of the round is made durable in a directory that is no longer there:
  // the round fails, and the restart opens the stores afresh (restored from the changelog).
  if (Status held = lock_.still_held(); !held) return Status::fatal("dedupe: " + held.message());
  Status settled = settle_restores();
  if (!settled) return settled;
  const int64_t now = now_ms();
  int fold_steps = kFoldStepsPerRound;
  for (auto& [id, part] : parts_) {
    if (part->restoring) continue;  // held back: no records, nothing to write
    if (changelog_on()) {
      // The changelog goes into the round's commit; the local copy follows only once
      // the round is committed, so it never holds a claim the changelog lacks.
      part->plan = part->store->plan_round(settings_.retention, settings_.fingerprint_bytes, now);
      if (!part->plan->changed) continue;
      Status st = write_changelog(*part, *part->plan);
      if (!st) return st;
      continue;
    }
    Status st = part->store->write_round(settings_.retention, settings_.fingerprint_bytes, now,
                                         &fold_steps);
    if (!st) return st;
    report(*part, now);
  }
  return Status::ok();
}

Status DedupeTransform::commit() {
  if (!changelog_on()) return Status::ok();
  const int64_t now = now_ms();
  int fold_steps = kFoldStepsPerRound;
  for (auto& [id, part] : parts_) {
    if (part->restoring || !part->plan) continue;
    PartitionStore::RoundPlan plan = std::move(*part->plan);
    part->plan.reset();
    // Not synced: the changelog is the durable copy; a lost tail is restored from it.
    int64_t pos = plan.changed ? host_.state_position(changelog_topic_, part->partition) : -1;
    Status st = part->store->apply_round(plan, false, pos, &fold_steps);
    if (!st) return st;
    report(*part, now);
  }
  return Status::ok();
}

Status DedupeTransform::abort() {
  for (auto& [id, part] : parts_) {
    if (part->restoring) continue;  // its thread owns the store
    part->plan.reset();
    part->store->drop_round();
  }
  return Status::ok();
}

Status DedupeTransform::reconfigure(const sdk::Config& config) {
  for (auto& [id, part] : parts_)
    if (part->restoring)  // its thread reads the policies
      return Status::unsupported("a partition is restoring in the background");
  Settings next = Settings::parse(config);
  std::string what;
  if (!same_store_layout(settings_, next, what)) return Status::unsupported(what);
  // Whole: every key same_store_layout lets through is read from settings_ when used, so
  // none is left behind (standby.budget and changelog.catch.up.timeout were, when the keys
  // were copied one by one).
  const std::string changed = in_place_changes(settings_, next);
  settings_ = std::move(next);
  // Stores opened later take it from settings_.tuning; open ones (warm copies too) now.
  for (auto& [id, part] : parts_) part->store->set_own_files_max(settings_.tuning.own_files_max);
  for (auto& [id, w] : warm_)
    if (w.store) w.store->set_own_files_max(settings_.tuning.own_files_max);
  if (!changed.empty()) say_once_per_stage(host_, "in place", "dedupe: changed in place: " + changed);
  return Status::ok();
}

}  // namespace exactly::dedupe
