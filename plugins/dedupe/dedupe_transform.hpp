// The owner-aware dedupe transform: the first record to carry an id claims it (its
// offset becomes the owner); a replay of the owner is emitted again, anything else with
// that id is a duplicate (or a conflict when its content differs).
#pragma once

#include <exactly/sdk.hpp>
#include <exactly/state_dir_lock.hpp>
#include <rocksdb/cache.h>
#include <rocksdb/slice.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dedupe_settings.hpp"
#include "id_extractor.hpp"
#include "key_order.hpp"
#include "partition_store.hpp"

namespace exactly::dedupe {

// A partition name as a directory name: safe characters kept, anything else replaced,
// plus a hash of the original whenever it had to change (so names never collide).
std::string store_dir_name(const std::string& partition_name);

class DedupeTransform final : public sdk::Transform {
 public:
  DedupeTransform(sdk::Host host, const sdk::Config& config);
  // The create-time checks (Settings::parse) without opening or locking state.dir (ABI 1.3).
  static sdk::Status validate(const sdk::Config& config);
  ~DedupeTransform() override;

  sdk::Status assign(const std::vector<sdk::Partition>& parts) override;
  sdk::Status revoke(const std::vector<sdk::Partition>& parts) override;
  sdk::Status process(const sdk::Batch& in, const sdk::Emitter& out) override;
  sdk::Status prepare_commit() override;
  sdk::Status commit() override;
  sdk::Status abort() override;
  sdk::Status reconfigure(const sdk::Config& config) override;
  sdk::Status positions(const std::vector<sdk::Partition>& parts) override;
  // Standby copies (standby_copies.cpp): keep these partitions' stores current from the
  // changelog without owning them, so that taking one over restores only the tail.
  sdk::Status standby(const std::vector<sdk::Partition>& parts) override;

 private:
  struct Counts {
    uint64_t claims = 0, replays = 0, duplicates = 0, conflicts = 0, id_errors = 0,
             claimed_key_bytes = 0, lookups_skipped = 0;
  };
  struct Part {
    sdk::Partition partition;
    std::string labels;  // partition=<name>
    std::unique_ptr<PartitionStore> store;
    std::optional<PartitionStore::RoundPlan> plan;  // written to the changelog, not applied yet
    // Scratch of the batch being processed.
    std::vector<uint32_t> lookup_items;  // batch indices, then sorted by key
    KeyOrder order;
    std::vector<rocksdb::Slice> keys;
    std::vector<uint64_t> hashes;  // of keys
    std::vector<rocksdb::PinnableSlice> values;
    std::vector<rocksdb::Status> statuses;
    size_t batch_ids = 0, batch_key_bytes = 0;  // what the batch may claim (reserve_round)
    Counts counts;
    // A restore in its own thread while the host holds the partition back (ABI 1.2).
    bool restoring = false;  // pipeline thread's view, until settle_restores() joins
    std::thread restorer;
    std::atomic<bool> cancel{false};
    std::atomic<bool> restored{false};  // the thread is done; restore_result is set
    sdk::Status restore_result;
    // A record that finds its own claim is a replay of a round that may not have been
    // committed, and comes out again, only at or past this offset; below it the round
    // was committed and the group's offsets were moved back: a duplicate (rewound_input.cpp).
    int64_t replays_from = -1;
  };
  struct Item {
    Part* part = nullptr;
    size_t key_pos = 0;  // a batch of long ids may hold more than 4 GiB of them
    uint32_t key_len = 0;
    uint64_t hash = 0, fingerprint = 0;
    int32_t lookup = -1;  // index into part->values, -1 = not looked up
    int32_t reject = -1;  // index into reasons_, -1 = has an id
    // Step 2's answer from the unfolded claims (the round's included). Step 3 probes
    // again only when a record before it in the batch claimed an id of the same bit in
    // claimed_bits_: most ids are new, and the probe is a cache miss.
    const RoundClaims::Claim* unindexed = nullptr;
  };

  // A warm copy of a partition this instance does not own.
  struct Warm {
    sdk::Partition partition;
    std::string labels;
    std::unique_ptr<PartitionStore> store;
    bool refused = false;  // the changelog cannot serve it (reported once)
  };
  using Clock = std::chrono::steady_clock;

  sdk::Status decide_changelog();
  static sdk::Status no_changelog_sink();
  sdk::Status open_changelog(const sdk::Partition& p, sdk::StateInfo& info);
  // `ready`: the partition's store, already open (its standby copy, or opened side by
  // side with the others of its assignment), to continue from instead of opening it.
  sdk::Status open_partition(const sdk::Partition& p, std::unique_ptr<Part>& out,
                             std::unique_ptr<PartitionStore> ready);
  // Opens the stores of `todo` that `ready` lacks on several threads at once; each one's
  // outcome in `opened` (by todo's index).
  sdk::Status open_stores_side_by_side(const std::vector<const sdk::Partition*>& todo,
                                       std::vector<std::unique_ptr<PartitionStore>>& ready,
                                       std::vector<sdk::Status>& opened, std::vector<char>& damaged);
  std::string store_dir(const sdk::Partition& p) const;
  sdk::Status catch_up(Warm& w, Clock::time_point deadline);
  // The standby copy of `p`, if there is one (it stops being a standby).
  std::unique_ptr<PartitionStore> take_warm(const sdk::Partition& p);
  sdk::Status open_store(const std::string& dir, int32_t id, bool wipe,
                         std::unique_ptr<PartitionStore>& out, bool* damaged = nullptr);
  // A store of `p` that could not be read (`why`): moved aside, so that the partition is
  // restored from its changelog (on.store.damaged: restore), and ok; else `why`.
  sdk::Status set_aside_damaged(const sdk::Partition& p, const sdk::Status& why);
  // Changelog mode: bring the store up to the changelog's committed end.
  // `cancel` (background restores): stop early with a fatal status when it turns true.
  sdk::Status restore(Part& part, const std::atomic<bool>* cancel = nullptr);
  // A store remembers the changelog it follows (a file beside its data): a stage whose
  // changelog name changed (moved to another place in the chain, a renamed pipeline) is
  // refused with the old name instead of meeting a new, empty changelog, which read as
  // re-created: the store was wiped and its claims lost. Checked once per assignment,
  // before its restore (open_partition).
  sdk::Status check_changelog_name(const Part& part);
  // Applies the changelog of `p` from `from` to its committed end; with a deadline,
  // stops at the first round boundary (a meta record) after it.
  sdk::Status read_changelog(PartitionStore& store, const sdk::Partition& p, int64_t from,
                             Clock::time_point deadline = Clock::time_point::max(),
                             const std::atomic<bool>* cancel = nullptr);
  // Background restores (background_restore.cpp).
  // Changelog positions between the store and the changelog's end, or -1 if unknown.
  int64_t restore_backlog(Part& part);
  void start_background_restore(Part& part);
  // Joins finished background restores; the first failure is returned (pipeline thread).
  sdk::Status settle_restores();
  void stop_restore(Part& part);
  // More changelog positions than this to read: restore in the background.
  static constexpr int64_t kBackgroundRestorePositions = 64;
  // Threads that open an assignment's stores at once (open_stores_side_by_side): opens
  // wait on the disk more than they compute, so more than the cores.
  static constexpr size_t kSideBySideOpens = 8;
  // Input moved back (rewound_input.cpp): where replays start, once the store is ready.
  void find_rewind(Part& part);
  static int64_t covered_by(const StoreMeta& m);
  bool is_behind(const StoreMeta& m, int64_t start_offset) const;
  // A store (or changelog) behind the committed position: refuse or warn per policy.
  sdk::Status behind(Part& part, const std::string& what);
  sdk::Status write_changelog(Part& part, const PartitionStore::RoundPlan& plan);
  bool changelog_on() const { return use_changelog_; }
  void report(Part& p, int64_t now_ms);
  void flush_counts(Part& p);

  sdk::Host host_;
  Settings settings_;
  sdk::StateDirLock lock_;
  std::string changelog_topic_;
  bool use_changelog_ = false;
  bool changelog_decided_ = false;
  IdExtractor ids_;
  std::shared_ptr<rocksdb::Cache> cache_;
  std::unordered_map<int32_t, std::unique_ptr<Part>> parts_;
  std::map<int32_t, Warm> warm_;
  int32_t warm_next_ = 0;  // where the next catch-up starts (round-robin under the budget)

  std::vector<Item> items_;
  // The ids this batch has claimed so far, one bit per hash (see Item::unindexed).
  static constexpr int kClaimedBitsLog2 = 17;  // 16 KiB: ~7% false hits at 10,000 claims
  std::vector<uint64_t> claimed_bits_ = std::vector<uint64_t>((size_t{1} << kClaimedBitsLog2) / 64);
  static size_t claimed_bit(uint64_t hash) { return hash >> (64 - kClaimedBitsLog2); }
  std::string keys_;
  std::vector<std::string> reasons_;
};

}  // namespace exactly::dedupe
