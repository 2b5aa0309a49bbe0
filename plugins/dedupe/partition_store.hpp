// One input partition's dedupe state: the folded claims (id -> owner) in claims files of
// the store's own (claims_file.hpp; or, for claims.format sst and stores made before,
// in RocksDB's default column family), and a RocksDB with the sequence index +
// bookkeeping in "seq".
//
// A round's claims are written as one value of the sequence index (the round's chunk),
// in one synced WriteBatch with eviction and the meta: one memtable entry per round
// instead of one skiplist insert per id. Claims stay in an in-memory table (the running
// round's from the moment they are made) until enough have gathered; then they are folded
// into one claims file (or one ingested SST file) and the chunks shrink to their timestamps.
// On open, chunks not folded yet are read back into the table.
#pragma once

#include <exactly/sdk.hpp>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "background_priority.hpp"
#include "claim_codec.hpp"
#include "claims_file.hpp"
#include "eviction_filter.hpp"
#include "key_order.hpp"
#include "presence_filter.hpp"
#include "round_claims.hpp"
#include "round_writer.hpp"
#include "store_options.hpp"

namespace exactly::dedupe {

struct Retention {
  uint64_t max_keys = 0;   // 0 = unbounded
  uint64_t max_bytes = 0;  // 0 = unbounded
  int64_t max_age_ms = 0;  // 0 = unbounded
  bool any() const { return max_keys || max_bytes || max_age_ms; }
};

struct StoreGauges {
  double keys = 0;
  double bytes = 0;
  double window_seconds = 0;
  double compacting = 0;  // 1 once the store left the row of folded files
};

class PartitionStore {
 public:
  // `partition_id` sets the size of the store's first fold (first_fold_at in the .cpp).
  // On failure `damaged` (if given) says whether the store's contents could not be read
  // (RocksDB's corruption, a claims file failing its check, a chunk or the bookkeeping
  // not decoding), as against the system refusing (permissions, a full disk, a lock).
  static sdk::Status open(const std::string& dir, const StoreTuning& tuning,
                          const std::shared_ptr<rocksdb::Cache>& cache, uint32_t partition_id,
                          std::unique_ptr<PartitionStore>& out, bool* damaged = nullptr);
  ~PartitionStore();
  // Removes a store (before a restore starts it over): its RocksDB files and its own
  // claims files.
  static sdk::Status destroy(const std::string& dir);
  // A read while running found the store's contents damaged (RocksDB's block checksum,
  // a claim that does not decode). RocksDB opens such a store without complaint (it checks
  // blocks when it reads them), so the store is marked: the next open refuses it as
  // damaged and `on.store.damaged` decides. Returns `why` with what was done.
  static sdk::Status mark_damaged(const std::string& dir, const std::string& why);
  PartitionStore(const PartitionStore&) = delete;
  PartitionStore& operator=(const PartitionStore&) = delete;

  const std::string& dir() const { return dir_; }
  const StoreMeta& durable() const { return meta_; }

  // A store whose changelog is its durable copy writes without a WAL (Kafka Streams'
  // stores do the same): the WAL held every unfolded claim a second time (the folded
  // form is what reaches the store's files): 0.5-1 CPU-second of the store's writer
  // thread per 10M records and 44% of the bytes exactly wrote (docs/benchmarks.md, "The
  // store's WAL"). A kill then loses what the memtable held since its last flush, and
  // the next open restores it from the changelog, as it restored a tail lost to a
  // machine's crash before. Every write of such a store goes to the sequence column
  // family (the claims family only takes ingested files, which the MANIFEST records),
  // so a flush persists a prefix of its writes and no atomic_flush is needed. Turning it
  // off (the changelog turned out unsupported) first flushes what was written without.
  sdk::Status set_changelog_backed(bool on);

  // The stored claims of the batch's ids that the round does not hold yet: the store's
  // own claims files, newest first, then one MultiGet of the claims column family for
  // the rest (if it holds any); `keys` must be in byte-wise order (KeyOrder), `hashes`
  // their XXH3 hashes.
  void lookup(size_t n, const rocksdb::Slice* keys, const uint64_t* hashes,
              rocksdb::PinnableSlice* values, rocksdb::Status* statuses);
  // False when the key (by its XXH3 hash) is certainly not in the claims column family,
  // so lookup() can be skipped; true while the presence filter is being built.
  bool may_be_stored(uint64_t hash) {
    if (building_ && build_done_.load(std::memory_order_acquire)) adopt_built_filter();
    return presence_ == nullptr || presence_->may_contain(hash);
  }
  uint64_t presence_filter_bytes() const { return presence_ ? presence_->bytes() : 0; }
  // Claims not folded into the claims column family yet, the running round's included
  // (check before lookup results: they are newer). Their fingerprints have
  // unindexed_fp_bytes() bytes.
  // A fold in progress keeps its table here until it is adopted: older than unindexed_,
  // newer than the column family.
  const RoundClaims::Claim* find_unindexed(std::string_view key, uint64_t hash) const {
    if (!unindexed_.empty())
      if (const auto* c = unindexed_.find(key, hash)) return c;
    return folding_active_ && !folding_.empty() ? folding_.find(key, hash) : nullptr;
  }
  // Starts loading what a record's checks (unindexed and folding tables, presence
  // filter) will read; see DedupeTransform::process.
  [[gnu::always_inline]] void prefetch(uint64_t hash) const {
    if (!unindexed_.empty()) unindexed_.prefetch(hash);
    if (folding_active_ && !folding_.empty()) folding_.prefetch(hash);
    if (presence_) presence_->prefetch(hash);
  }
  uint32_t unindexed_fp_bytes() const { return unindexed_fp_bytes_; }
  // A stored claim counts only at or above the floor (below it, it is evicted).
  bool live(uint64_t seq) const { return seq >= meta_.floor; }

  // Claims of the running round (not committed yet).
  size_t round_size() const { return round_list_.size(); }
  // Before a batch: room for `n` claims of `key_bytes` in all, so that the claims of the
  // batch move nothing find_unindexed() returned for it.
  void reserve_round(size_t n, size_t key_bytes) { unindexed_.reserve_more(n, key_bytes); }
  // A claim goes straight into the table of unfolded claims (a round's claims used to
  // gather in a table of their own and be copied over at commit, one random write each);
  // abort takes them out again (drop_round).
  void claim(std::string_view key, uint64_t hash, int64_t offset, uint64_t fp, uint32_t fp_bytes);
  void saw(int64_t offset) {
    if (offset > round_high_) round_high_ = offset;
  }

  // The source position after the last record read this round (records dropped
  // upstream included): what a restart resumes from once this round commits.
  void read_up_to(int64_t position) {
    if (position > round_position_) round_position_ = position;
  }

  // What a round changes: its claims cut into chunks of the sequence index, the chunks
  // eviction deletes, and the new meta. The changelog carries exactly these.
  struct RoundPlan {
    StoreMeta next;
    std::vector<std::pair<uint64_t, std::string>> chunks;  // first seq, chunk value
    std::vector<uint64_t> evicted;                         // first seqs of dropped chunks
    int64_t oldest_ms = -1;
    bool changed = false;
  };
  RoundPlan plan_round(const Retention& limits, uint32_t fp_bytes, int64_t now_ms) const;
  // Writes the plan in one WriteBatch (WAL synced when `sync`); `changelog` >= 0 records
  // the changelog position the store then matches. `fold_steps`, when given, is how many
  // fold starts and adoptions the caller's round may still take (decremented here).
  sdk::Status apply_round(const RoundPlan& plan, bool sync, int64_t changelog = -1,
                          int* fold_steps = nullptr);
  // prepare_commit without a changelog: plan and apply, synced.
  sdk::Status write_round(const Retention& limits, uint32_t fp_bytes, int64_t now_ms,
                          int* fold_steps = nullptr) {
    return apply_round(plan_round(limits, fp_bytes, now_ms), true, -1, fold_steps);
  }
  // abort: forget the round (its claims leave the table, replaced claims come back);
  // replays claim again.
  void drop_round();

  // Restore from a changelog: apply records in changelog order, then finish with the
  // position after the last one read (folds, syncs, and records that position).
  sdk::Status restore_chunk(uint64_t first_seq, std::string_view value);
  sdk::Status restore_tombstone(uint64_t first_seq);
  sdk::Status restore_meta(std::string_view value);
  // `flush`: a store without a WAL flushes what the restore wrote, so that a kill does
  // not take the restore back (a standby copy's frequent catch-ups do not: each flush
  // is a file and a sync, and the copy's restore at assignment flushes).
  // The changelog was re-created with this store ahead of it and the store is kept: it
  // follows the new changelog from `position` (its end) on.
  sdk::Status follow_new_changelog(int64_t position);
  sdk::Status finish_restore(int64_t changelog_position, bool flush = true);
  uint64_t restored_claims() const { return restored_claims_; }

  // claims.files.max, changed in place by a reload: the next fold merges to it.
  void set_own_files_max(size_t max) { own_files_max_ = max; }

  StoreGauges gauges(int64_t now_ms) const;
  // CPU seconds the fold, filter-build and merge threads spent since the last call, the
  // folds raised out of SCHED_IDLE (background_priority.hpp) and the merges adopted
  // since then.
  struct BackgroundCpu {
    double fold = 0, filter_build = 0, merge = 0;
    uint64_t folds_raised = 0, merges = 0;
  };
  // Writes that waited for the disk (WAL synced) since the last call.
  uint64_t take_synced_writes() { return std::exchange(synced_writes_, 0); }
  BackgroundCpu take_background_cpu() {
    BackgroundCpu c{fold_cpu_.exchange(0.0), build_cpu_.exchange(0.0), merge_cpu_.exchange(0.0),
                    fold_raises_, merges_};
    fold_raises_ = 0;
    merges_ = 0;
    return c;
  }

 private:
  PartitionStore() = default;
  // Folds every written claim now (restore, close): waits for a running fold, then folds
  // the rest and waits for that too.
  sdk::Status index_claims();
  // The fold of unindexed_ into the claims column family runs on a thread of its own
  // (the sort and the SST file are most of a commit's CPU otherwise); finish_fold adopts
  // its result on the pipeline thread (filter, chunk trim, meta.indexed).
  void start_fold();
  // `sync`: the adoption's write waits for the disk (without a changelog; with one the
  // changelog is the durable copy, and an fdatasync on the pipeline thread was a late
  // round whenever the broker was flushing: docs/benchmarks.md, "A fold's fsync").
  sdk::Status finish_fold(bool wait, bool sync = true);
  void size_ahead();
  void finish_sizing(bool wait);
  sdk::Status flush_restore_batch();
  sdk::Status replay_chunks(uint64_t from);
  void load_oldest_chunk_ms();
  double bytes_per_key() const;
  uint64_t int_property(rocksdb::ColumnFamilyHandle* cf, const char* name) const;
  // The presence filter is built from the claims column family on a thread of its own
  // (at open, and again when evicted keys have come to outnumber the live ones);
  // meanwhile the previous one, or none, answers.
  void start_filter_build();
  void adopt_built_filter();
  void stop_filter_build();
  // While the claims are a row of folded files (fold_files.hpp): drops the oldest files
  // the floor has passed, or turns compactions on when the store leaves that layout.
  void keep_fold_layout();
  // Into `wb`: the folded form (their time only) of the whole chunks listed below `below`.
  void put_folded_chunk_times(rocksdb::WriteBatch& wb, uint64_t below);
  // The store's own claims files (claims-<end>.xc): read at open, oldest first; files
  // whose claims the floor has passed are removed.
  sdk::Status load_own_files();
  // After load_own_files: no file missing that eviction did not remove: between two
  // others, below the oldest, or the newest the meta knows of (ClaimsFileStats::after,
  // evicted_mark.hpp). Sets damaged_.
  sdk::Status check_own_files_whole();
  void add_own_file(std::shared_ptr<const ClaimsFile> f);
  // Past claims.files.max own files, neighbouring files are merged into one on a thread
  // of the store's own (dedupe-merge); finish_merge adopts the result on the pipeline
  // thread once it is done. Fatal only when the merged file cannot be written (the
  // inputs stay).
  void start_merge();
  sdk::Status finish_merge();
  void stop_merge();
  uint64_t stored_keys() const;  // claims in files (own and SST), evicted ones included
  struct OwnTotals {
    uint64_t claims = 0, bytes = 0;
  };
  OwnTotals own_totals() const;
  // Whether lookups and filter builds read the claims column family.
  bool reads_cf() const { return cf_has_claims_ || !own_mode_; }

  std::string dir_;
  EvictionFilter filter_;  // outlives db_ (declared first, destroyed last)
  rocksdb::DB* db_ = nullptr;
  rocksdb::ColumnFamilyHandle* claims_ = nullptr;
  rocksdb::ColumnFamilyHandle* seq_ = nullptr;
  rocksdb::ReadOptions read_;
  StoreMeta meta_;
  int64_t oldest_chunk_ms_ = -1;  // time of the chunk holding the floor, -1 = none

  rocksdb::WriteBatch round_batch_;  // the last synced write's, kept for its buffer
  // Writes the unsynced ones (a changelog) off the pipeline thread; made by the first.
  std::unique_ptr<RoundWriter> writer_;
  // A round's or an adoption's batch: an empty one with a buffer from an earlier write.
  rocksdb::WriteBatch take_batch(bool sync);
  // A write's options: synced when asked and the store keeps a WAL, no WAL when it rests
  // on a changelog (set_changelog_backed).
  rocksdb::WriteOptions write_options(bool sync) const;
  bool wal_ = true;
  // Writes the sequence index's memtable (every write of the store) to its files.
  rocksdb::Status flush_memtable();
  // Writes it: synced here, or unsynced by writer_ (`next_seq`: the store's next
  // sequence number once it is in).
  sdk::Status write(rocksdb::WriteBatch&& wb, bool sync, uint64_t next_seq);
  // Waits for writer_'s queue: before reading the sequence index past what it wrote, or
  // writing to the store directly.
  sdk::Status drain_writes();
  RoundClaims unindexed_;
  // The chunks written whole (their claims not folded yet): first seq and time, in seq
  // order. The fold's adoption writes their folded form (the time alone) from here;
  // reading them back took 7-68 ms on the pipeline thread per 35-40 MB fold once
  // RocksDB had flushed them (docs/benchmarks.md, "A fold's adoption").
  struct WholeChunk {
    uint64_t start;
    int64_t ms;
  };
  std::deque<WholeChunk> whole_chunks_;
  void forget_whole_chunk(uint64_t start);
  // The running round: its claims' 1-based indexes in unindexed_, in claim order (the
  // chunks' order); the claims it replaced; the table's size, key bytes and fingerprint
  // width before its first claim (what drop_round goes back to).
  std::vector<uint32_t> round_list_;
  struct Replaced {
    uint32_t index;
    RoundClaims::Claim old;
  };
  std::vector<Replaced> round_replaced_;
  size_t round_begin_ = 0, round_key_bytes_ = 0;
  uint32_t round_fp_before_ = 8;
  void end_round() {
    round_list_.clear();
    round_replaced_.clear();
  }
  uint32_t unindexed_fp_bytes_ = 8;
  size_t index_threshold_ = 0;
  // Claims that start a round's fold: the first fill's staggered size, then the threshold.
  size_t fold_at_ = 0;
  bool background_fold_ = true;
  rocksdb::Options sst_options_;
  rocksdb::Options fold_options_;  // sst_options_ plus this fold's label and compression
  rocksdb::CompressionType fold_compression_ = rocksdb::kNoCompression;
  size_t fold_files_max_ = 256;
  bool compacting_ = false;
  bool damaged_ = false;  // open() failed on the store's contents (see open)
  // Folds write claims files of the store's own (claims_file.hpp) instead of SST files:
  // a store made with claims.format own, or one that holds such files already. The
  // claims column family then only holds what a store had before (cf_has_claims_).
  bool own_mode_ = false;
  bool cf_has_claims_ = false;
  std::vector<std::shared_ptr<const ClaimsFile>> own_files_;  // oldest claims first
  // Own files labelled at or below it were evicted (evicted_mark.hpp): they may be gone.
  uint64_t evicted_through_ = 0;
  uint64_t synced_writes_ = 0;
  std::shared_ptr<const ClaimsFile> fold_file_;  // the fold thread's, adopted by finish_fold
  size_t own_files_max_ = 256;
  // A running merge: its inputs (neighbours in own_files_), and what its thread made.
  std::thread merger_;  // joinable while a merge runs or waits to be adopted
  std::atomic<bool> merge_done_{false}, merge_stop_{false};
  std::vector<std::shared_ptr<const ClaimsFile>> merge_inputs_;
  std::shared_ptr<const ClaimsFile> merged_;
  std::string merge_error_;
  uint64_t merges_ = 0;
  std::atomic<double> merge_cpu_{0.0};
  uint64_t next_seq_ = 0;
  int64_t round_high_ = -1;
  int64_t round_position_ = -1;
  std::unique_ptr<rocksdb::WriteBatch> restore_wb_;
  uint64_t restored_claims_ = 0;
  bool round_fresh_ = true;
  uint64_t key_bytes_seen_ = 0, keys_seen_ = 0;

  std::unique_ptr<PresenceFilter> presence_;  // null: not built yet, every key is looked up
  bool building_ = false;
  bool closing_ = false;
  std::thread builder_;
  // Sizing a first fill ahead (see size_ahead): the sizer thread makes and faults in
  // sized_slots_, then sets sized_ready_; the pipeline thread adopts them.
  std::thread sizer_;
  std::atomic<bool> sized_ready_{false};
  MappedArray<uint64_t> sized_slots_;
  bool sizing_ = false;
  // During a store's first fill, a thread of its own (dedupe-spare) faults in the table
  // being filled ahead of the fill and makes the next table, which the first fold swaps
  // in (see make_spare); later fills reuse the folded table's pages.
  void make_spare();
  void take_spare();
  void reap_spare();  // joins the spare thread once it has ended
  std::thread spare_maker_;
  RoundClaims spare_;
  bool spare_started_ = false;
  std::atomic<bool> spare_stop_{false};
  // spare_ is whole (the thread no longer touches it) / the thread has ended.
  std::atomic<bool> spare_ready_{false}, spare_exited_{false};
  bool spare_taken_ = false;
  std::atomic<bool> build_done_{false}, build_stop_{false};
  std::unique_ptr<PresenceFilter> built_;  // the builder's result, adopted by this thread
  std::vector<uint64_t> folded_while_building_;

  // The fold thread reads folding_, fold_live_ and fold_fp_bytes_ and writes fold_order_
  // and fold_status_; the pipeline thread leaves them alone until fold_done_.
  RoundClaims folding_;
  std::vector<uint32_t> fold_live_;
  uint32_t fold_fp_bytes_ = 8;
  uint64_t fold_target_ = 0;  // meta.indexed once the fold is adopted
  std::string fold_path_;
  KeyOrder fold_order_;
  rocksdb::Status fold_status_;
  std::thread folder_;
  std::atomic<bool> fold_done_{false};
  // Pacing of a large fold (see start_fold): the size of the table that fills meanwhile,
  // and the pipeline thread's "now waiting for it".
  std::atomic<size_t> unindexed_count_{0};
  std::atomic<bool> fold_hurry_{false};
  // The running fold's priority, and how often one had to be raised (pipeline thread).
  std::unique_ptr<YieldingThread> fold_priority_;
  uint64_t fold_raises_ = 0;
  void raise_fold();
  static constexpr size_t kPacedFoldClaims = size_t{1} << 18;
  static constexpr double kFoldPaceSeconds = 8.0;
  bool folding_active_ = false;
  bool fold_adds_filter_ = false;  // the fold thread adds its keys to presence_
  bool fold_failed_ = false;
  std::atomic<double> fold_cpu_{0.0}, build_cpu_{0.0};
};

}  // namespace exactly::dedupe
