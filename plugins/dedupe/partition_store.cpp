#include "partition_store.hpp"

#include "background_priority.hpp"
#include "changelog_codec.hpp"
#include "claim_fold.hpp"
#include "damage_mark.hpp"
#include "evicted_mark.hpp"
#include "empty_wals.hpp"
#include "fold_files.hpp"
#include "info_log.hpp"

#include <rocksdb/write_batch.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <cstdio>
#include <ctime>

namespace exactly::dedupe {

namespace {
// The label of the file a claims file follows in its store; 0 for none, or for a file
// written before files said it (ClaimsFileStats::after; merged files of that time name
// the file below their inputs in merged_from).
uint64_t follows(const ClaimsFileStats& st) {
  const uint64_t after = st.after != 0 ? st.after : st.merged_from;
  return after == 0 ? 0 : after - 1;
}

int64_t read_chunk_ms(const rocksdb::Slice& v) {
  const char* p = v.data();
  uint64_t ms = 0;
  return get_varint(p, v.data() + v.size(), ms) ? static_cast<int64_t>(ms) : -1;
}

struct Chunk {
  uint64_t start = 0;
  int64_t ms = 0;
  std::string key;
  bool stored = false;
};

// The sequence index from the seek hint, then the round's own chunks (not stored yet).
struct ChunkWalk {
  std::unique_ptr<rocksdb::Iterator> it;
  std::vector<uint64_t> pending;  // first seqs of the round's chunks
  size_t next_pending = 0;
  int64_t round_ms = 0;
  // Where `it` ends: a fresh iterator once earlier rounds' queued writes are in (they
  // hold the newest stored chunks), or null when none were queued. Called once.
  std::function<std::unique_ptr<rocksdb::Iterator>()> catch_up;
  uint64_t resume = 0;  // the first seq not yet walked

  bool next(Chunk& c) {
    if (it && !(it->Valid() && it->key().size() == 8) && catch_up) {
      auto fresh = std::exchange(catch_up, nullptr)();
      if (fresh) {
        it = std::move(fresh);
        it->Seek(seq_key(resume));
      }
    }
    if (it && it->Valid() && it->key().size() == 8) {
      c.start = seq_from_key(std::string_view(it->key().data(), 8));
      c.ms = read_chunk_ms(it->value());  // -1: unreadable (the eviction walk decides)
      c.key.assign(it->key().data(), 8);
      c.stored = true;
      resume = c.start + 1;
      it->Next();
      return true;
    }
    if (next_pending < pending.size()) {
      c.start = pending[next_pending++];
      c.ms = round_ms;
      c.key.clear();
      c.stored = false;
      return true;
    }
    return false;
  }
};

size_t claim_bytes(size_t key_len, uint32_t fp_bytes) { return 1 + key_len + 3 + fp_bytes; }

// Adds the calling thread's CPU time so far (it ends right after).
void add_thread_cpu(std::atomic<double>& to) {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  to.fetch_add(static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9);
}
// Partitions keyed by id fill at the same pace, so they would fold together every
// cycle. A store's first fill folds early by 0 to 7/16 of the threshold, and every later
// fill is a whole threshold, so the phase lasts. Bit reversal of the id mod 8 spreads
// consecutive ids over half a cycle: ids 0-3 fold their first fills at 1, 3/4, 7/8 and
// 5/8 of the threshold, ids 0-7 at every sixteenth from 9/16 on (a 2M-record run, ~500k
// ids a partition, still folds none). Ids 8 apart share a phase (fold_steps spreads them).
size_t first_fold_at(size_t threshold, uint32_t id) {
  const uint32_t slot = ((id & 1) << 2) | (id & 2) | ((id >> 2) & 1);
  return threshold - threshold * slot / 16;
}
}  // namespace

sdk::Status PartitionStore::open(const std::string& dir, const StoreTuning& tuning,
                                 const std::shared_ptr<rocksdb::Cache>& cache,
                                 uint32_t partition_id, std::unique_ptr<PartitionStore>& out,
                                 bool* damaged) {
  if (damaged != nullptr) *damaged = false;
  auto unreadable = [damaged](sdk::Status st) {
    if (damaged != nullptr) *damaged = true;
    return st;
  };
  if (std::string why; read_damage_mark(dir, why))
    return unreadable(sdk::Status::fatal("dedupe: store " + dir + " was found damaged while running (" + why + ")"));
  std::unique_ptr<PartitionStore> s(new PartitionStore());
  s->dir_ = dir;
  s->read_ = make_lookup_read_options();
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, make_claims_options(tuning, cache, &s->filter_)},
      {kSeqColumnFamily, make_seq_options(tuning, cache)}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DBOptions db_options = make_db_options(tuning);
  db_options.info_log = open_info_log(dir, db_options.max_log_file_size);
  rocksdb::Status st = rocksdb::DB::Open(db_options, dir, cfs, &handles, &s->db_);
  if (st.IsInvalidArgument()) {
    // A store made before folded files stayed as they are has claims below level 0:
    // it stays a leveled LSM.
    cfs[0].options = make_claims_options(tuning, cache, &s->filter_, ClaimsLayout::leveled);
    st = rocksdb::DB::Open(db_options, dir, cfs, &handles, &s->db_);
    s->compacting_ = true;
  }
  // A file the store's own bookkeeping names is gone (its MANIFEST, a table file): the
  // contents, not the system, are at fault (QA: a store without its MANIFEST restarted the
  // pipeline for ever instead of being set aside).
  const bool file_gone = st.IsPathNotFound() && std::filesystem::exists(dir + "/CURRENT");
  if (st.IsCorruption() || file_gone)
    return unreadable(sdk::Status::fatal("dedupe: cannot open store " + dir + ": " + st.ToString()));
  if (!st.ok()) return sdk::Status::fatal("dedupe: cannot open store " + dir + ": " + st.ToString());
  s->claims_ = handles[0];
  s->seq_ = handles[1];
  std::unique_ptr<rocksdb::LogFile> wal;
  if (s->db_->GetCurrentWalFile(&wal).ok() && wal) remove_empty_wals(dir, wal->LogNumber());

  std::string meta;
  st = s->db_->Get(rocksdb::ReadOptions(), s->seq_, rocksdb::Slice(), &meta);
  if (st.ok()) {
    if (!s->meta_.decode(meta))
      return unreadable(sdk::Status::fatal("dedupe: store " + dir + " has unreadable bookkeeping (meta)"));
  } else if (st.IsCorruption()) {
    return unreadable(sdk::Status::fatal("dedupe: cannot read store " + dir + ": " + st.ToString()));
  } else if (!st.IsNotFound()) {
    return sdk::Status::fatal("dedupe: cannot read store " + dir + ": " + st.ToString());
  }
  s->filter_.publish_floor(s->meta_.floor);
  s->drop_round();
  s->restore_wb_ = std::make_unique<rocksdb::WriteBatch>();
  s->index_threshold_ = index_threshold(tuning);
  s->fold_at_ = first_fold_at(s->index_threshold_, partition_id);
  s->background_fold_ = tuning.background_fold;
  s->sst_options_ = rocksdb::Options(db_options, cfs[0].options);
  s->fold_files_max_ = tuning.fold_files_max;
  s->own_files_max_ = tuning.own_files_max;
  s->cf_has_claims_ = s->int_property(s->claims_, "rocksdb.estimate-num-keys") != 0 ||
                      s->int_property(s->claims_, "rocksdb.total-sst-files-size") != 0;
  sdk::Status own = s->load_own_files();
  if (!own) return s->damaged_ ? unreadable(own) : own;
  s->own_mode_ = !s->own_files_.empty() || (tuning.own_files && !s->compacting_ && !s->cf_has_claims_);
  s->keep_fold_layout();
  s->fold_compression_ = fold_compression(tuning);
  // A fold's file is written whole before the meta that adopts it, and a store with a
  // changelog writes no WAL: after a kill the meta on disk can be folds and merges behind
  // the files (up to a memtable's worth, more after a restore, which writes little to
  // it). Every claim below the highest label found is in a file: files are made of
  // contiguous runs of claims, and a merge removes its inputs only once its file is in
  // place. So those claims are not folded again. Folded again, a fold came to the name of
  // a file found here and replaced it: a merged file then lost the claims below the
  // fold's (its inputs were gone), and a merge running beside such folds (a restore's)
  // removed files they had just made, or wrote one file with them (damaged).
  const uint64_t replay_from = s->meta_.indexed;
  if (!s->own_files_.empty())
    s->meta_.indexed = std::max(s->meta_.indexed, s->own_files_.back()->stats().seq_end);
  sdk::Status replayed = s->replay_chunks(replay_from);
  if (!replayed) return s->damaged_ ? unreadable(replayed) : replayed;
  if (s->meta_.indexed > replay_from) {
    // The chunks those files hold keep only their time, and the meta says so.
    rocksdb::WriteBatch wb;
    s->put_folded_chunk_times(wb, s->meta_.indexed);
    wb.Put(s->seq_, rocksdb::Slice(), s->meta_.encode());
    st = s->db_->Write(s->write_options(false), &wb);
    if (!st.ok()) return sdk::Status::fatal("dedupe: cannot write store " + dir + ": " + st.ToString());
  }

  s->load_oldest_chunk_ms();
  if (!s->cf_has_claims_ && s->own_files_.empty())
    s->presence_ = std::make_unique<PresenceFilter>();  // nothing stored: exact at once
  else
    s->start_filter_build();
  out = std::move(s);
  return sdk::Status::ok();
}

void PartitionStore::load_oldest_chunk_ms() {
  oldest_chunk_ms_ = -1;
  if (meta_.floor >= meta_.next_seq) return;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), seq_));
  it->Seek(seq_key(meta_.seek_hint));
  if (it->Valid() && it->key().size() == 8) oldest_chunk_ms_ = read_chunk_ms(it->value());
}

sdk::Status PartitionStore::replay_chunks(uint64_t from) {
  if (from >= meta_.next_seq) return sdk::Status::ok();
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), seq_));
  // `from` (the meta's `indexed`) is always where a round began (or below the first
  // one). Chunks below `indexed` (in files found at open) are only listed, so that the
  // next fold keeps just their time.
  it->Seek(seq_key(from));
  for (; it->Valid(); it->Next()) {
    if (it->key().size() != 8) continue;
    const uint64_t first = seq_from_key(std::string_view(it->key().data(), 8));
    ChunkView c;
    bool whole = parse_chunk(std::string_view(it->value().data(), it->value().size()), c);
    if (whole && c.folded) continue;
    if (whole) {
      whole_chunks_.push_back({first, c.ms});
      unindexed_fp_bytes_ = std::min(unindexed_fp_bytes_, c.fp_bytes);
      whole = for_each_chunk_claim(c, first, [&](uint64_t seq, std::string_view key,
                                                 int64_t offset, uint64_t fp) {
        if (seq >= meta_.indexed && seq >= meta_.floor)
          unindexed_.upsert(key, XXH3_64bits(key.data(), key.size()), seq, offset, fp);
      });
    }
    // Skipping it would forget ids that were seen (their duplicates would pass): the
    // store refuses to open instead, and says what the operator can do.
    if (!whole) {
      damaged_ = true;
      return sdk::Status::fatal(
          "dedupe: store " + dir_ + " has an unreadable chunk of claims (from claim " +
          std::to_string(first) + ", not yet folded into its files): the store cannot be "
          "trusted. Move the directory away to start the partition over (with a changelog "
          "it is restored from the changelog; without one, ids it had seen pass again)");
    }
  }
  return sdk::Status::ok();
}

sdk::Status PartitionStore::index_claims() {
  sdk::Status st = finish_fold(true);
  if (!st) return st;
  start_fold();
  return finish_fold(true);
}

// A table's first fill grows by doubling, and each doubling rehashes every claim into
// fresh pages on the pipeline thread; at ~1M claims that took 100-150 ms per partition,
// all partitions in the same round (a 325-490 ms latency spike at 200k records/s). Once
// the first fill of a partition has 1/16 of the threshold, the table is sized for the
// whole fill: its arrays grow in place (VA only), and a thread (not lowered: it faults
// pages in) makes the full-size slot array, which a later round adopts; then make_spare
// faults the rest in.
void PartitionStore::size_ahead() {
  if (sizing_) return finish_sizing(false);
  // Once sized, the table's capacity is the threshold: the check below is then false.
  if (!background_fold_ || unindexed_.capacity() >= index_threshold_ ||
      unindexed_.size() < index_threshold_ / 16)
    return;
  unindexed_.reserve_entries(index_threshold_, unindexed_.key_bytes() / unindexed_.size() + 1);
  const size_t slots = RoundClaims::slots_for(index_threshold_);
  sized_ready_.store(false, std::memory_order_relaxed);
  // Only the slot array, which a round's rehash walks at random, is faulted in before it
  // is adopted; the append arrays fill in order and are faulted in ahead of the fill
  // afterwards (make_spare), not in a burst at 1/16 of the first fill.
  sizer_ = std::thread([this, slots] {
    pthread_setname_np(pthread_self(), "dedupe-size");
    // Not lowered: all it does is fault pages in (see populate_range).
    try {
      MappedArray<uint64_t> s;
      s.assign_zeros(slots);
      populate_range(s.range());
      sized_slots_ = std::move(s);
    } catch (const std::bad_alloc&) {
      // No room: the table keeps growing by doubling on the pipeline thread.
    }
    sized_ready_.store(true, std::memory_order_release);
  });
  sizing_ = true;  // only once the thread exists: finish_sizing joins it
}

void PartitionStore::finish_sizing(bool wait) {
  if (!sizing_) return;
  if (!wait && !sized_ready_.load(std::memory_order_acquire)) return;
  sizer_.join();
  sizing_ = false;
  unindexed_.adopt_slots(std::move(sized_slots_));
  sized_slots_.release();
  make_spare();
}

void PartitionStore::make_spare() {
  if (spare_started_ || closing_ || !background_fold_ || folding_active_ || unindexed_.empty())
    return;
  spare_started_ = true;
  // The table being filled: its claim and key arrays (sized for the whole fill above).
  auto current = unindexed_.ranges();
  current.erase(current.begin());  // the slots: adopted already faulted in
  // The next table, only before a first fold: later fills swap in the folded table,
  // which keeps its pages. Room for a fill that overshoots the threshold by a few rounds.
  const bool spare = folding_.empty() && folding_.capacity() < index_threshold_;
  const size_t n = index_threshold_ + index_threshold_ / 8;
  const size_t key_bytes = unindexed_.key_bytes() / unindexed_.size() + 1;
  spare_maker_ = std::thread([this, current = std::move(current), spare, n, key_bytes,
                              first_fill = fold_at_] {
    pthread_setname_np(pthread_self(), "dedupe-spare");
    // Not lowered: all it does is fault pages in, paced by the fill (see populate_range).
    RoundClaims t;
    // Pages are faulted in 2 MiB at a time, each array paced by the fill:
    // - the current table's 1/32 of the threshold ahead of it (a step or two; at 1/8,
    //   ~60 MB were zeroed past the end of a 2M-record run);
    // - the next table's from 3/8 of the first fill (its staggered size, first_fold_at)
    //   on, done by 3/4. A store whose first fill ends early (a short run, a partition
    //   with few ids) then never faults in a table it does not use: ~150 MB per
    //   partition at the default threshold with UUID ids, the sort arrays included (in
    //   2M-record runs here the spare thread's 0.32-1.23 CPU-s of c's 4.8-7.1 fell to
    //   0.06-0.29).
    // A steady trickle of the kernel's page zeroing instead of bursts: fresh pages fault
    // in at ~25x the cost of reused ones in this VM class, and every partition reaches
    // 1/16 of the threshold at about the same time (at 200k records/s, before the first
    // folds were staggered, the first fold cycle's worst second was 500-750 ms with the
    // burst; docs/benchmarks.md).
    struct Job {
      std::pair<void*, size_t> range;
      bool next;  // the next table's (else the current one's)
      size_t done = 0;
    };
    std::vector<Job> jobs;
    for (const auto& r : current) jobs.push_back({r, false});
    if (spare) {
      try {
        t.reserve(n, key_bytes);
        for (const auto& r : t.ranges()) jobs.push_back({r, true});
      } catch (const std::bad_alloc&) {
        // No room: the first fold sizes the next table itself.
      }
    }
    constexpr size_t kStep = size_t{2} << 20;
    constexpr double kNextFrom = 0.375;
    constexpr double kLead = 1.0 / 32;
    // The first fold takes the next table as soon as it is whole, without waiting for
    // this thread (a join waited for its steps and naps: 11-38 ms on the pipeline thread
    // at each store's first fold, docs/benchmarks.md "A fold's adoption"). With SST
    // folds the table is handed over only once the sort arrays below are made too (they
    // are the fold's): until then the fold joins this thread.
    auto stop = [&] { return spare_stop_.load(std::memory_order_relaxed); };
    bool published = false;
    auto publish = [&] {
      if (published) return;
      published = true;
      spare_ = std::move(t);
      spare_ready_.store(true, std::memory_order_release);
    };
    for (;;) {
      if (stop()) break;
      const double count = static_cast<double>(unindexed_count_.load(std::memory_order_relaxed));
      const double fill = count / static_cast<double>(index_threshold_);  // of the current table
      const double first = count / static_cast<double>(first_fill);  // of the first fill
      bool left = false, stepped = false;
      for (auto& j : jobs) {
        if (j.range.first == nullptr || j.done >= j.range.second) continue;
        left = true;
        const double due =
            std::min(1.0, j.next ? (first - kNextFrom) / (0.75 - kNextFrom) : fill + kLead);
        if (due <= 0 || static_cast<double>(j.done) > due * static_cast<double>(j.range.second))
          continue;
        if (stop()) break;
        const size_t len = std::min(kStep, j.range.second - j.done);
        populate_range({static_cast<char*>(j.range.first) + j.done, len});
        j.done += len;
        stepped = true;
      }
      if (own_mode_ && std::none_of(jobs.begin(), jobs.end(), [](const Job& j) {
            return j.next && j.range.first != nullptr && j.done < j.range.second;
          }))
        publish();
      if (!left) break;
      for (int i = 0; !stepped && i < 10 && !stop(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // The first fold's sort arrays too (no fold runs before take_spare joins this).
    if (spare && !own_mode_ && !stop()) fold_order_.prepare(n);
    publish();  // read by the pipeline thread after the join, or after spare_ready_
    spare_exited_.store(true, std::memory_order_release);
  });
}

void PartitionStore::reap_spare() {
  if (spare_maker_.joinable() && spare_exited_.load(std::memory_order_acquire)) spare_maker_.join();
}

void PartitionStore::take_spare() {
  if (!spare_maker_.joinable() || spare_taken_) return reap_spare();
  spare_stop_.store(true, std::memory_order_relaxed);  // what is not faulted in yet faults on use
  spare_taken_ = true;
  if (!spare_ready_.load(std::memory_order_acquire)) spare_maker_.join();
  if (spare_.capacity() > unindexed_.capacity()) std::swap(unindexed_, spare_);  // both empty
  spare_ = RoundClaims();
  reap_spare();
}

// Adds a fold's live keys to a presence filter: `add(h)` for each, the filter being
// larger than the caches, so the blocks (`block_of(h)`) of a few keys ahead are loaded
// first. One loop for both places that add them (the fold thread, or finish_fold while a
// filter is built). The prefetch is here, on the address the functor returns: a functor
// that prefetched itself was taken by GCC 12 for a pure function and its calls dropped.
template <typename BlockOf, typename Add>
void add_folded_keys(const MappedArray<RoundClaims::Claim>& claims, const std::vector<uint32_t>& live,
                     BlockOf&& block_of, Add&& add) {
  constexpr size_t kAhead = 8;
  for (size_t j = 0; j < live.size(); ++j) {
    if (j + kAhead < live.size()) __builtin_prefetch(block_of(claims[live[j + kAhead]].hash));
    add(claims[live[j]].hash);
  }
}

void PartitionStore::start_fold() {
  if (folding_active_ || fold_failed_) return;
  if (meta_.indexed >= meta_.next_seq && unindexed_.empty()) return;
  finish_sizing(true);  // its slots belong to this table
  std::swap(unindexed_, folding_);
  unindexed_.clear();
  take_spare();
  // The next fill grows to about this one's size: sized once, not doubled up to it, and
  // its pages faulted in by the fold thread (fresh pages are slow to fault in this VM
  // class: a round that first touched a fresh table stalled for 400 ms). Usually that
  // table already has them: the first fold's was made ahead (take_spare), later folds
  // swap in the table folded before; what is left is a fill that outgrew it.
  // Not when closing (the table is freed right after) nor for an inline fold (its
  // thread is waited for at once).
  std::vector<std::pair<void*, size_t>> prefault;
  if (!folding_.empty() && !closing_ && background_fold_) {
    unindexed_.reserve(folding_.size(), folding_.key_bytes() / folding_.size() + 1);
    prefault = unindexed_.ranges();
  }
  fold_fp_bytes_ = unindexed_fp_bytes_;
  fold_target_ = meta_.next_seq;
  fold_live_.clear();
  // The fold's keys go into the presence filter on the fold thread (25-55 ms of adds per
  // 1.4M-key fold held up a round on the pipeline thread). Not while a filter is being
  // built: its adoption would replace the filter being added to, so then they are added
  // here at finish_fold, as they are also kept for the built one.
  fold_adds_filter_ = presence_ != nullptr && !building_;
  if (fold_adds_filter_) presence_->begin_adds(folding_.size());
  folding_active_ = true;
  fold_hurry_.store(false, std::memory_order_relaxed);
  unindexed_count_.store(0, std::memory_order_relaxed);
  fold_status_ = rocksdb::Status::OK();
  fold_done_.store(false, std::memory_order_release);
  fold_path_ = dir_ + "/claims-" + std::to_string(fold_target_) + ".sst";
  // A file that compactions will rewrite is written plain; the compaction compresses
  // what reaches the bottom.
  fold_options_ = fold_sst_options(sst_options_, compacting_ ? rocksdb::kNoCompression : fold_compression_);
  fold_priority_ = std::make_unique<YieldingThread>();
  // The file this fold's file follows (ClaimsFileStats::after): merges keep its label.
  const uint64_t after = 1 + (own_files_.empty() ? 0 : own_files_.back()->stats().seq_end);
  folder_ = std::thread([this, prefault = std::move(prefault), floor = meta_.floor, after] {
    // Before the thread is lowered: faulting pages in holds the process's address-space
    // lock, and a thread at SCHED_IDLE that holds it on a busy machine holds up every
    // mmap, munmap and mprotect of the pipeline thread behind it (huge_pages.hpp).
    for (const auto& r : prefault) populate_range(r);
    // Lowered before it is named: a thread seen as "dedupe-fold" already runs at the
    // fold's priority (fold_priority_test.cpp looks it up by name).
    fold_priority_->lower();
    pthread_setname_np(pthread_self(), "dedupe-fold");
    // Which claims are still live: here rather than on the pipeline thread (a pass over
    // ~1.4M claims into a fresh array held a round up by 10-35 ms).
    const auto& claims = folding_.claims();
    fold_live_.reserve(claims.size());
    // The file's label: every claim in it is below. A restore folds claims of a round
    // whose meta has not been read yet, which are past fold_target_: a label below them
    // would let the file go while they are still live.
    uint64_t label = fold_target_;
    for (uint32_t i = 0; i < claims.size(); ++i)
      if (claims[i].seq >= floor) {
        fold_live_.push_back(i);
        label = std::max(label, claims[i].seq + 1);
      }
    if (fold_live_.empty()) {
      fold_priority_->leave();
      fold_done_.store(true, std::memory_order_release);
      return;
    }
    // A large fold is paced to end by the time the next table is 3/4 full (or within
    // kFoldPaceSeconds): its CPU is then a steady share of a core, not a burst that every
    // partition's fold makes together and that the pipeline's records wait behind (at
    // 200k records/s, the worst second of the second fold cycle: 333-688 ms unpaced,
    // 203-359 ms paced; docs/benchmarks.md). A round that has to wait for the fold ends
    // the pacing (fold_hurry_).
    const auto t0 = std::chrono::steady_clock::now();
    const bool paced = fold_live_.size() >= kPacedFoldClaims;
    auto pace = [&](double done) {
      while (!fold_hurry_.load(std::memory_order_relaxed)) {
        const double fill = static_cast<double>(unindexed_count_.load(std::memory_order_relaxed)) /
                            static_cast<double>(index_threshold_);
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (done <= std::max(fill / 0.75, elapsed / kFoldPaceSeconds)) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    };
    const auto paced_by = paced ? std::function<void(double)>(pace) : std::function<void(double)>();
    if (own_mode_) {
      ClaimsFileStats stats;
      std::string error;
      const std::string path = claims_file_path(dir_, label);
      auto file = std::make_shared<ClaimsFile>();
      if (!write_claims_file(path, folding_, fold_live_, fold_fp_bytes_, label, stats, error, paced_by, after) ||
          !file->open(path, false, error))
        fold_status_ = rocksdb::Status::IOError(error);
      else
        fold_file_ = std::move(file);
    } else {
      fold_options_.table_properties_collector_factories.push_back(fold_label(label));
      fold_status_ = fold_claims(db_, claims_, fold_options_, fold_path_, folding_, fold_live_,
                                 fold_fp_bytes_, fold_order_, paced_by);
    }
    if (fold_adds_filter_)
      add_folded_keys(claims, fold_live_,
                      [&](uint64_t h) { return presence_->background_block(h); },
                      [&](uint64_t h) { presence_->add_background(h); });
    add_thread_cpu(fold_cpu_);
    fold_priority_->leave();
    fold_done_.store(true, std::memory_order_release);
  });
}

void PartitionStore::raise_fold() {
  if (folding_active_ && fold_priority_ && fold_priority_->raise()) ++fold_raises_;
}

sdk::Status PartitionStore::finish_fold(bool wait, bool sync) {
  if (!folding_active_) return sdk::Status::ok();
  if (!wait && !fold_done_.load(std::memory_order_acquire)) return sdk::Status::ok();
  fold_hurry_.store(true, std::memory_order_relaxed);  // whoever waits, waits for no pacing
  if (!fold_done_.load(std::memory_order_acquire)) raise_fold();
  if (folder_.joinable()) folder_.join();
  folding_active_ = false;
  if (fold_adds_filter_) presence_->end_adds();  // the fold thread's adds, done by now
  if (!fold_status_.ok()) {
    // The claims stay in their chunks (meta.indexed did not move): the next open reads
    // them back. This store folds no more.
    fold_failed_ = true;
    return sdk::Status::fatal("dedupe: cannot fold claims into store " + dir_ + ": " +
                              fold_status_.ToString());
  }
  const uint64_t made = fold_file_ ? fold_file_->stats().seq_end : 0;
  if (fold_file_) add_own_file(std::move(fold_file_));
  fold_file_.reset();
  const auto& claims = folding_.claims();
  if (presence_ && !fold_adds_filter_)
    add_folded_keys(claims, fold_live_, [&](uint64_t h) { return presence_->add_block(h); },
                    [&](uint64_t h) { presence_->add(h); });
  if (building_)
    for (uint32_t i : fold_live_) folded_while_building_.push_back(claims[i].hash);
  // Evicted keys stay in the filter: once they outnumber the live ones, rebuild it; and
  // in one layer when growth has stacked several (their false positives add up: five
  // full layers ~1%).
  if (!fold_live_.empty() && presence_ && !building_ &&
      (presence_->layers() > 5 ||
       presence_->count() > 2 * std::max<uint64_t>(stored_keys(), 1u << 20)))
    start_filter_build();
  // The folded chunks keep only their time now. A chunk still queued in writer_ is
  // written before this batch, which follows it in the same queue (or drains it first
  // when synced). Those below the seek hint were evicted meanwhile (by a round, or by
  // a restore's meta, whose tombstones compaction may have dropped): not written again.
  rocksdb::WriteBatch wb = take_batch(sync);
  put_folded_chunk_times(wb, fold_target_);
  StoreMeta next = meta_;
  next.indexed = std::max(meta_.indexed, fold_target_);
  next.newest_file = std::max(meta_.newest_file, made);
  wb.Put(seq_, rocksdb::Slice(), next.encode());
  sdk::Status ws = write(std::move(wb), sync, next.next_seq);
  folding_.clear();
  if (!ws) return ws;
  meta_ = next;
  // Files below the floor may go: synced above, the floor is durable; unsynced (a
  // changelog), a crash that loses it is followed by a restore from the changelog, which
  // brings it back before any record is looked up (as after a merge, below).
  keep_fold_layout();
  start_merge();
  return sdk::Status::ok();
}

void PartitionStore::put_folded_chunk_times(rocksdb::WriteBatch& wb, uint64_t below) {
  while (!whole_chunks_.empty() && whole_chunks_.front().start < below) {
    const WholeChunk c = whole_chunks_.front();
    whole_chunks_.pop_front();
    if (c.start < meta_.seek_hint) continue;
    char time[10];
    const char* time_end = put_varint(time, static_cast<uint64_t>(c.ms < 0 ? 0 : c.ms));
    wb.Put(seq_, seq_key(c.start), rocksdb::Slice(time, static_cast<size_t>(time_end - time)));
  }
}

void PartitionStore::keep_fold_layout() {
  if (own_mode_) {
    // Own files go whole once the floor passes their label, like folded SST files. One
    // that cannot be removed now is removed at the next open (load_own_files).
    uint64_t through = 0;
    for (const auto& f : own_files_) {
      if (f->stats().seq_end > meta_.floor) break;
      through = f->stats().seq_end;
    }
    if (through == 0) return;
    // Said before the files go, so that an open can tell them from files lost; until it
    // can be said the files stay (lookups skip what is below the floor).
    std::string error;
    if (through > evicted_through_ && !write_evicted_mark(dir_, through, error)) return;
    evicted_through_ = std::max(evicted_through_, through);
    while (!own_files_.empty() && own_files_.front()->stats().seq_end <= meta_.floor) {
      std::remove(own_files_.front()->path().c_str());
      own_files_.erase(own_files_.begin());
    }
    return;
  }
  while (!compacting_) {
    FoldFiles f = inspect_fold_files(db_, claims_);
    if (f.unlabelled || f.files.size() > fold_files_max_) {
      compacting_ = true;
      // Only a bad option name fails here; lookups are unaffected either way.
      (void)db_->SetOptions(claims_, {{"disable_auto_compactions", "false"}});
      return;
    }
    // The file with the oldest claims, once the floor has passed its label, holds only
    // evicted claims (lookups ignore them already) and goes whole.
    if (f.files.empty() || f.files.front().seq_end > meta_.floor ||
        !f.files.front().oldest_in_level0)
      return;
    if (!db_->DeleteFile(f.files.front().name).ok()) return;  // tried again after a fold
  }
}

void PartitionStore::start_filter_build() {
  if (building_ || closing_) return;
  building_ = true;
  build_done_.store(false);
  build_stop_.store(false);
  folded_while_building_.clear();
  const uint64_t expected = stored_keys();
  // The iterator and the list of own files are a consistent view from here on; keys
  // folded later are collected in folded_while_building_ and added when the result is
  // adopted. The files stay mapped while the builder holds them, removed or not.
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  ro.readahead_size = 4u << 20;
  std::shared_ptr<rocksdb::Iterator> it;
  if (reads_cf()) it.reset(db_->NewIterator(ro, claims_));
  builder_ = std::thread([this, it, expected, files = own_files_] {
    pthread_setname_np(pthread_self(), "dedupe-filter");
    nice_background();
    // Room to grow to twice the size before the next layer.
    auto f = std::make_unique<PresenceFilter>(2 * expected);
    uint64_t n = 0;
    // Each add is a miss in a filter far larger than the caches: the hashes wait in a
    // small ring while their blocks load.
    constexpr size_t kRing = 16;
    uint64_t ring[kRing];
    auto add = [&](const char* key, size_t len) {
      if ((n & 4095) == 0 && build_stop_.load(std::memory_order_relaxed)) return false;
      uint64_t h = XXH3_64bits(key, len);
      f->prefetch(h);
      if (n >= kRing) f->add(ring[n % kRing]);
      ring[n % kRing] = h;
      ++n;
      return true;
    };
    bool whole = true;
    if (it) {
      for (it->SeekToFirst(); it->Valid(); it->Next())
        if (!add(it->key().data(), it->key().size())) break;
      whole = it->status().ok();
    }
    for (const auto& file : files)
      whole = whole && file->for_each([&](std::string_view key, const ClaimValue&) {
        return add(key.data(), key.size());
      });
    for (uint64_t j = n > kRing ? n - kRing : 0; j < n; ++j) f->add(ring[j % kRing]);
    if (whole && !build_stop_.load()) built_ = std::move(f);
    add_thread_cpu(build_cpu_);
    build_done_.store(true, std::memory_order_release);
  });
}

void PartitionStore::adopt_built_filter() {
  builder_.join();
  building_ = false;
  if (built_) {
    for (uint64_t h : folded_while_building_) built_->add(h);
    presence_ = std::move(built_);
  }
  folded_while_building_.clear();
  folded_while_building_.shrink_to_fit();
}

void PartitionStore::stop_filter_build() {
  if (!building_) return;
  build_stop_.store(true);
  builder_.join();
  building_ = false;
  built_.reset();
}

PartitionStore::~PartitionStore() {
  drop_round();         // an uncommitted round's claims must not be folded below
  closing_ = true;      // the fold below must not start another build or merge
  stop_merge();         // its inputs stay; the next open's first fold starts it again
  fold_hurry_.store(true, std::memory_order_relaxed);
  finish_sizing(true);
  spare_stop_.store(true, std::memory_order_relaxed);
  if (spare_maker_.joinable()) spare_maker_.join();
  stop_filter_build();  // it reads db_ (an open iterator must not outlive it)
  if (db_ == nullptr) return;
  // What is queued goes in first (a failure: the next open restores from the changelog).
  writer_.reset();
  // A clean close folds the gathered claims, so the next open has nothing to read back.
  // If it fails, the next open reads them back from their chunks (a fold that was
  // running is waited for first).
  (void)index_claims();
  if (folder_.joinable()) folder_.join();
  // Written without a WAL: the memtable's claims go to the files now, so the next open
  // need not restore them (RocksDB's close would flush too; said here).
  if (!wal_) (void)flush_memtable();
  if (claims_) db_->DestroyColumnFamilyHandle(claims_);
  if (seq_) db_->DestroyColumnFamilyHandle(seq_);
  db_->Close();
  delete db_;
}

void PartitionStore::lookup(size_t n, const rocksdb::Slice* keys, const uint64_t* hashes,
                            rocksdb::PinnableSlice* values, rocksdb::Status* statuses) {
  if (n == 0) return;
  if (!own_mode_) {
    db_->MultiGet(read_, claims_, n, keys, values, statuses, /*sorted_input=*/true);
    return;
  }
  // Own files hold every claim folded since the store took them up, so a claim found
  // there is newer than any in the column family (which only a store made before holds).
  std::vector<size_t> rest;
  char buf[kMaxClaimValue];
  for (size_t i = 0; i < n; ++i) {
    const std::string_view key(keys[i].data(), keys[i].size());
    ClaimValue v;
    bool hit = false;
    for (auto f = own_files_.rbegin(); f != own_files_.rend() && !hit; ++f) hit = (*f)->find(key, hashes[i], v);
    if (hit) {
      values[i].PinSelf(rocksdb::Slice(buf, encode_claim(buf, v.seq, v.offset, v.fingerprint, v.fingerprint_bytes)));
      statuses[i] = rocksdb::Status::OK();
    } else if (reads_cf()) {
      rest.push_back(i);
    } else {
      statuses[i] = rocksdb::Status::NotFound();
    }
  }
  if (rest.empty()) return;
  std::vector<rocksdb::Slice> k(rest.size());
  std::vector<rocksdb::PinnableSlice> v(rest.size());
  std::vector<rocksdb::Status> st(rest.size());
  for (size_t j = 0; j < rest.size(); ++j) k[j] = keys[rest[j]];
  db_->MultiGet(read_, claims_, rest.size(), k.data(), v.data(), st.data(), /*sorted_input=*/true);
  for (size_t j = 0; j < rest.size(); ++j) {
    statuses[rest[j]] = st[j];
    if (st[j].ok()) values[rest[j]].PinSelf(v[j]);
  }
}

sdk::Status PartitionStore::mark_damaged(const std::string& dir, const std::string& why) {
  std::string error;
  if (!write_damage_mark(dir, why, error))
    return sdk::Status::fatal(why + " (marking the store damaged failed: " + error + "; move " + dir +
                              " away to start the partition over)");
  return sdk::Status::fatal(why + ": the store is marked damaged (" + damage_mark_path(dir) +
                            "); when the partition is opened again, on.store.damaged decides");
}

sdk::Status PartitionStore::destroy(const std::string& dir) {
  rocksdb::Status rs = rocksdb::DestroyDB(dir, rocksdb::Options());
  if (!rs.ok())
    return sdk::Status::fatal("dedupe: cannot clear store " + dir + " before a restore: " + rs.ToString());
  // DestroyDB leaves files it does not know: the store's own claims files.
  std::error_code ec;
  for (const auto& f : list_claims_files(dir, ec))
    if (!std::filesystem::remove(f.path, ec)) break;
  if (!ec && !clear_damage_mark(dir))
    return sdk::Status::fatal("dedupe: cannot remove " + damage_mark_path(dir) + " before a restore");
  if (!ec && !clear_evicted_mark(dir))
    return sdk::Status::fatal("dedupe: cannot remove " + evicted_mark_path(dir) + " before a restore");
  if (ec) return sdk::Status::fatal("dedupe: cannot clear store " + dir + " before a restore: " + ec.message());
  return sdk::Status::ok();
}

sdk::Status PartitionStore::load_own_files() {
  std::error_code ec;
  auto found = list_claims_files(dir_, ec);
  if (ec)
    return sdk::Status::fatal("dedupe: cannot list store " + dir_ + ": " + ec.message());
  // Newest first: a merged file names the labels it covers, and inputs that a crash left
  // behind it (below it, within them) are removed unread. A fold that died before its
  // rename left an unfinished file: its claims are still in their chunks.
  std::reverse(found.begin(), found.end());
  uint64_t covered_from = UINT64_MAX;
  for (const auto& [end, path, kind] : found) {
    if (kind == ClaimsFileName::unfinished || end >= covered_from) {
      std::filesystem::remove(path, ec);
      if (ec) return sdk::Status::fatal("dedupe: cannot remove " + path + ": " + ec.message());
      continue;
    }
    auto f = std::make_shared<ClaimsFile>();
    std::string error;
    if (!f->open(path, true, error)) {
      damaged_ = f->damaged();
      return sdk::Status::fatal(
          "dedupe: store " + dir_ + " has a damaged claims file (" + error + "): the store "
          "cannot be trusted. Move the directory away to start the partition over (with a "
          "changelog it is restored from the changelog; without one, ids it had seen pass again)");
    }
    if (f->stats().merged_from != 0) covered_from = f->stats().merged_from;
    add_own_file(std::move(f));
  }
  switch (read_evicted_mark(dir_, evicted_through_)) {
    case EvictedMark::read:
      break;
    case EvictedMark::unreadable:
      damaged_ = true;
      return sdk::Status::fatal(
          "dedupe: store " + dir_ + " has an unreadable " + evicted_mark_path(dir_) +
          " (how far eviction removed its claims files; a number): the store cannot be "
          "trusted. Move the directory away to start the partition over (with a changelog it "
          "is restored from the changelog; without one, ids it had seen pass again)");
    case EvictedMark::absent: {
      // A new store, or one made before the mark: what is here is taken as whole (the
      // checks below still hold), and the mark is kept from now on.
      evicted_through_ = own_files_.empty() ? meta_.newest_file : follows(own_files_.front()->stats());
      std::string error;
      if (!write_evicted_mark(dir_, evicted_through_, error))
        return sdk::Status::fatal("dedupe: cannot write store " + dir_ + ": " + error);
      break;
    }
  }
  return check_own_files_whole();
}

sdk::Status PartitionStore::check_own_files_whole() {
  // A file gone that eviction did not remove is not something the store does: eviction
  // removes the oldest first (and says how far before it does, evicted_mark.hpp), and a
  // merge renames its file over its newest input before it removes the others. Its claims
  // are lost (a file deleted by hand, a partial copy of the directory): ids in it would
  // pass again. The floor alone does not tell: without a WAL the floor on disk may lag
  // the files eviction removed before a kill.
  const uint64_t gone_through = std::max(meta_.floor, evicted_through_);
  auto missing = [&](uint64_t label, const std::string& why) {
    damaged_ = true;
    return sdk::Status::fatal(
        "dedupe: store " + dir_ + " is missing its claims file " + claims_file_path(dir_, label) +
        " (" + why + "): the claims in it are lost and the store cannot be trusted. Move the "
        "directory away to start the partition over (with a changelog it is restored from the "
        "changelog; without one, ids it had seen pass again)");
  };
  const std::string evicted = " (eviction removed files up to " + std::to_string(evicted_through_) + ")";
  for (size_t i = 0; i < own_files_.size(); ++i) {
    const uint64_t below = follows(own_files_[i]->stats());
    if (below <= gone_through) continue;  // none, evicted, or written before files said it
    if (i == 0)
      return missing(below, own_files_[0]->path() + " follows it, and no older file is left" + evicted);
    if (below > own_files_[i - 1]->stats().seq_end)
      return missing(below, own_files_[i]->path() + " follows it, and " +
                                own_files_[i - 1]->path() + " is the one below");
  }
  if (meta_.newest_file > gone_through &&
      (own_files_.empty() || own_files_.back()->stats().seq_end < meta_.newest_file))
    return missing(meta_.newest_file, "the store's bookkeeping names it as its newest, and " +
                                          (own_files_.empty() ? "no claims file is left" + evicted
                                                              : own_files_.back()->path() + " is the newest left"));
  return sdk::Status::ok();
}

void PartitionStore::add_own_file(std::shared_ptr<const ClaimsFile> f) {
  // A fold done again after a crash may make a file of the same name: it replaces it.
  std::erase_if(own_files_, [&](const auto& g) { return g->path() == f->path(); });
  auto at = std::upper_bound(own_files_.begin(), own_files_.end(), f->stats().seq_end,
                             [](uint64_t end, const auto& g) { return end < g->stats().seq_end; });
  own_files_.insert(at, std::move(f));
}

void PartitionStore::start_merge() {
  const size_t n = own_files_.size();
  if (!own_mode_ || merger_.joinable() || closing_ || n <= own_files_max_) return;
  // The run of neighbours with the fewest claims, the newest of equals: a fold's files
  // merge with each other first and merged files with merged files of their size later,
  // so files grow in tiers and a claim is rewritten about log_fan_in(files) times.
  // Neighbours only: a file's label bounds its claims, and the oldest files go first.
  const size_t fan_in = std::clamp<size_t>(own_files_max_ / 2, 2, 16);
  size_t best = 0;
  uint64_t best_claims = UINT64_MAX, window = 0;
  for (size_t i = 0; i < n; ++i) {
    window += own_files_[i]->stats().claims;
    if (i >= fan_in) window -= own_files_[i - fan_in]->stats().claims;
    if (i + 1 >= fan_in && window <= best_claims) {
      best_claims = window;
      best = i + 1 - fan_in;
    }
  }
  merge_inputs_.assign(own_files_.begin() + static_cast<ptrdiff_t>(best),
                       own_files_.begin() + static_cast<ptrdiff_t>(best + fan_in));
  // Named as its newest input, which it replaces by a rename; the footer says which
  // labels it covers, so that an open after a crash removes inputs left behind.
  const uint64_t merged_from = 1 + (best == 0 ? 0 : own_files_[best - 1]->stats().seq_end);
  const std::string path = merge_inputs_.back()->path();
  merge_done_.store(false);
  merge_stop_.store(false);
  merged_.reset();
  merge_error_.clear();
  merger_ = std::thread([this, inputs = merge_inputs_, floor = meta_.floor, merged_from, path] {
    pthread_setname_np(pthread_self(), "dedupe-merge");
    nice_background();
    std::vector<const ClaimsFile*> raw;
    for (const auto& f : inputs) raw.push_back(f.get());
    ClaimsFileStats stats;
    std::string error;
    auto file = std::make_shared<ClaimsFile>();
    if (merge_claims_files(path, raw, floor, merged_from, stats, error, &merge_stop_) &&
        file->open(path, false, error))
      merged_ = std::move(file);
    else
      merge_error_ = error;
    add_thread_cpu(merge_cpu_);
    merge_done_.store(true, std::memory_order_release);
  });
}

sdk::Status PartitionStore::finish_merge() {
  if (!merger_.joinable() || !merge_done_.load(std::memory_order_acquire)) return sdk::Status::ok();
  merger_.join();
  auto inputs = std::move(merge_inputs_);
  merge_inputs_.clear();
  if (!merged_)
    return sdk::Status::fatal("dedupe: cannot merge the claims files of store " + dir_ + ": " +
                              merge_error_ + " (the files merged stay as they were)");
  // Eviction may have removed inputs meanwhile; those still here leave for the merged
  // file (the newest input's name is the merged file's already).
  std::erase_if(own_files_, [&](const auto& f) {
    return std::find(inputs.begin(), inputs.end(), f) != inputs.end();
  });
  for (const auto& f : inputs)
    if (f->path() != merged_->path()) std::remove(f->path().c_str());
  add_own_file(std::move(merged_));
  merged_.reset();
  ++merges_;
  keep_fold_layout();  // what the floor passed meanwhile
  start_merge();       // if still over
  return sdk::Status::ok();
}

void PartitionStore::stop_merge() {
  if (!merger_.joinable()) return;
  merge_stop_.store(true);
  merger_.join();
  merge_inputs_.clear();
  merged_.reset();
  // A merged file renamed into place before the stop is whole: the next open keeps it
  // and removes the inputs it covers.
}

PartitionStore::OwnTotals PartitionStore::own_totals() const {
  OwnTotals t;
  for (const auto& f : own_files_) {
    t.claims += f->stats().claims;
    t.bytes += f->stats().bytes;
  }
  return t;
}

uint64_t PartitionStore::stored_keys() const {
  return own_totals().claims + (reads_cf() ? int_property(claims_, "rocksdb.estimate-num-keys") : 0);
}

void PartitionStore::claim(std::string_view key, uint64_t hash, int64_t offset, uint64_t fp,
                           uint32_t fp_bytes) {
  if (round_fresh_) {
    // The sequence starts at the first claimed offset so that offset - seq, which is
    // what a claim stores, stays as small as the count of non-claims before it.
    next_seq_ = offset > 0 ? static_cast<uint64_t>(offset) : 0;
    round_fresh_ = false;
  }
  if (round_list_.empty()) {
    round_begin_ = unindexed_.size();
    round_key_bytes_ = unindexed_.key_bytes();
    round_fp_before_ = unindexed_fp_bytes_;
  }
  // One width for the tables: a running fold's claims are compared with it too.
  if (unindexed_.empty() && !folding_active_) unindexed_fp_bytes_ = fp_bytes;
  unindexed_fp_bytes_ = std::min(unindexed_fp_bytes_, fp_bytes);
  RoundClaims::Claim old{};
  bool replaced = false;
  const uint32_t index = unindexed_.claim(key, hash, next_seq_++, offset, fp, &old, &replaced);
  if (replaced) round_replaced_.push_back({index, old});
  round_list_.push_back(index);
  key_bytes_seen_ += key.size();
  ++keys_seen_;
}

void PartitionStore::drop_round() {
  if (!round_list_.empty()) {
    unindexed_.truncate(round_begin_, round_key_bytes_);
    for (auto r = round_replaced_.rbegin(); r != round_replaced_.rend(); ++r)
      unindexed_.put_back(r->index, r->old);
    unindexed_fp_bytes_ = round_fp_before_;
    end_round();
    unindexed_count_.store(unindexed_.size(), std::memory_order_relaxed);
  }
  next_seq_ = meta_.next_seq;
  round_high_ = meta_.high_water;
  round_position_ = meta_.position;
  round_fresh_ = meta_.fresh;
}

uint64_t PartitionStore::int_property(rocksdb::ColumnFamilyHandle* cf, const char* name) const {
  uint64_t v = 0;
  return db_->GetIntProperty(cf, name, &v) ? v : 0;
}

double PartitionStore::bytes_per_key() const {
  if (own_mode_ && !cf_has_claims_)
    if (const OwnTotals t = own_totals(); t.claims > 1000)
      return static_cast<double>(t.bytes) / static_cast<double>(t.claims);
  uint64_t sst = int_property(claims_, "rocksdb.total-sst-files-size");
  uint64_t all = int_property(claims_, "rocksdb.estimate-num-keys");
  uint64_t mem = int_property(claims_, "rocksdb.num-entries-active-mem-table") +
                 int_property(claims_, "rocksdb.num-entries-imm-mem-tables");
  if (sst > 0 && all > mem + 1000) return static_cast<double>(sst) / static_cast<double>(all - mem);
  // Nothing flushed yet: the encoded key plus a claim value and RocksDB's framing.
  double key = keys_seen_ ? static_cast<double>(key_bytes_seen_) / keys_seen_ : 16.0;
  return key + 20.0;
}

PartitionStore::RoundPlan PartitionStore::plan_round(const Retention& limits, uint32_t fp_bytes,
                                                     int64_t now_ms) const {
  RoundPlan plan;
  StoreMeta& next = plan.next;
  next = meta_;
  next.high_water = std::max(meta_.high_water, round_high_);
  next.position = std::max(meta_.position, round_position_);
  next.next_seq = next_seq_;
  if (!round_list_.empty()) next.fresh = false;

  // The round's claims cut into chunks below kMaxChunkBytes: [start index, end index).
  std::vector<std::pair<size_t, size_t>> cuts;
  std::vector<uint64_t> starts;
  {
    size_t begin = 0, bytes = 0;
    for (size_t i = 0; i < round_list_.size(); ++i) {
      size_t b = claim_bytes(unindexed_.at(round_list_[i]).key_len, fp_bytes);
      if (i > begin && bytes + b > kMaxChunkBytes) {
        cuts.emplace_back(begin, i);
        starts.push_back(unindexed_.at(round_list_[begin]).seq);
        begin = i;
        bytes = 0;
      }
      bytes += b;
    }
    if (begin < round_list_.size()) {
      cuts.emplace_back(begin, round_list_.size());
      starts.push_back(unindexed_.at(round_list_[begin]).seq);
    }
  }
  const uint64_t new_chunk = starts.empty() ? 0 : starts.front();

  // Eviction: raise the floor, oldest first.
  uint64_t floor = meta_.floor;
  if (!round_list_.empty() && meta_.fresh) floor = new_chunk;  // first claims set the base
  if (limits.max_keys && next_seq_ > floor + limits.max_keys) floor = next_seq_ - limits.max_keys;
  if (limits.max_bytes) {
    uint64_t allowed = static_cast<uint64_t>(static_cast<double>(limits.max_bytes) / bytes_per_key());
    if (next_seq_ > floor + allowed) floor = next_seq_ - allowed;
  }

  // Chunks of the sequence index from the seek hint: drop those wholly below the floor
  // (and, with an age limit, raise the floor past those that are too old). The round's
  // own chunks come last; one evicted on arrival is never written.
  uint64_t hint = meta_.seek_hint;
  size_t first_kept = 0;  // of the round's chunks
  if (meta_.floor < meta_.next_seq || !starts.empty()) {
    ChunkWalk walk;
    if (meta_.floor < meta_.next_seq) {
      walk.it.reset(db_->NewIterator(rocksdb::ReadOptions(), seq_));
      walk.it->Seek(seq_key(meta_.seek_hint));
      walk.resume = meta_.seek_hint;
      walk.catch_up = [this]() -> std::unique_ptr<rocksdb::Iterator> {
        if (!writer_ || writer_->written_mark() >= meta_.next_seq) return nullptr;
        (void)writer_->drain();  // a failure is returned by the next apply_round
        return std::unique_ptr<rocksdb::Iterator>(db_->NewIterator(rocksdb::ReadOptions(), seq_));
      };
    }
    walk.pending = starts;
    walk.round_ms = now_ms;
    const int64_t cutoff = limits.max_age_ms ? now_ms - limits.max_age_ms : INT64_MIN;
    Chunk cur, nxt;
    bool have = walk.next(cur);
    while (have) {
      bool more = walk.next(nxt);
      uint64_t end = more ? nxt.start : next_seq_;
      // A chunk whose time cannot be read was written no later than the chunk after it
      // (chunks are written in order): it takes that time, so age evicts it no earlier
      // than its successor and never holds back the chunks after it. Without a readable
      // successor it counts as written now.
      const int64_t ms = cur.ms >= 0 ? cur.ms : more && nxt.ms >= 0 ? nxt.ms : now_ms;
      if (ms < cutoff) floor = std::max(floor, end);
      if (end > floor) {
        hint = cur.start;
        plan.oldest_ms = ms;
        break;
      }
      if (cur.stored) plan.evicted.push_back(cur.start);
      else ++first_kept;
      hint = end;
      cur = std::move(nxt);
      have = more;
    }
  }
  floor = std::min(floor, next_seq_);
  next.floor = floor;
  next.seek_hint = hint;

  for (size_t c = first_kept; c < cuts.size(); ++c) {
    std::string chunk;
    chunk.reserve(16 + (cuts[c].second - cuts[c].first) * (20 + fp_bytes));
    begin_chunk(chunk, now_ms, fp_bytes);
    for (size_t i = cuts[c].first; i < cuts[c].second; ++i) {
      const auto& cl = unindexed_.at(round_list_[i]);
      append_chunk_claim(chunk, unindexed_.key_of(cl), cl.seq, cl.offset, cl.fingerprint, fp_bytes);
    }
    plan.chunks.emplace_back(starts[c], std::move(chunk));
  }
  plan.changed = !(next.next_seq == meta_.next_seq && next.floor == meta_.floor &&
                   next.high_water == meta_.high_water && next.seek_hint == meta_.seek_hint &&
                   next.fresh == meta_.fresh && next.position == meta_.position &&
                   plan.chunks.empty() && plan.evicted.empty());
  return plan;
}

sdk::Status PartitionStore::apply_round(const RoundPlan& plan, bool sync, int64_t changelog,
                                        int* fold_steps) {
  StoreMeta next = plan.next;
  if (changelog >= 0) next.changelog = changelog;
  next.newest_file = meta_.newest_file;  // the store's files, not the round's
  if (!plan.changed && next.changelog == meta_.changelog) {
    end_round();
    return sdk::Status::ok();  // nothing happened in this partition this round
  }
  rocksdb::WriteBatch wb = take_batch(sync);
  for (uint64_t e : plan.evicted) wb.Delete(seq_, seq_key(e));
  for (const auto& [start, chunk] : plan.chunks) wb.Put(seq_, seq_key(start), chunk);
  wb.Put(seq_, rocksdb::Slice(), next.encode());
  sdk::Status ws = write(std::move(wb), sync, next.next_seq);
  if (!ws) return ws;
  meta_ = next;
  // Evicted ones stay listed until the adoption, which skips them (see finish_fold).
  for (const auto& [start, chunk] : plan.chunks) {
    while (!whole_chunks_.empty() && whole_chunks_.back().start >= start)
      whole_chunks_.pop_back();  // written over (sequences only grow: not expected)
    whole_chunks_.push_back({start, read_chunk_ms(chunk)});
  }
  oldest_chunk_ms_ = meta_.floor < meta_.next_seq ? plan.oldest_ms : -1;
  filter_.publish_floor(meta_.floor);
  // The round's claims are in unindexed_ already (claim()); those evicted on arrival
  // stay there, below the floor, until the fold passes them over.
  end_round();
  unindexed_count_.store(unindexed_.size(), std::memory_order_relaxed);
  size_ahead();
  // The fold runs beside the pipeline; a round waits for it only when the next one has
  // gathered twice the threshold meanwhile (memory stays bounded).
  // Adopting a finished fold and starting one each hold up the round (the filter takes
  // every folded key; the next table is set up): partitions whose first folds were
  // staggered alike (first_fold_at) reach the threshold together, so the caller spreads
  // these steps over its rounds, `fold_steps` at a time. Twice the threshold overrides it.
  const bool full = unindexed_.size() >= 2 * index_threshold_;
  auto may_step = [&] { return fold_steps == nullptr || *fold_steps > 0 || full; };
  auto took_step = [&] {
    if (fold_steps != nullptr && *fold_steps > 0) --*fold_steps;
  };
  sdk::Status fs = finish_merge();
  if (!fs) return fs;
  if (folding_active_ && may_step()) {
    fs = finish_fold(false, sync);
    if (!fs) return fs;
    if (!folding_active_) took_step();
  }
  if (unindexed_.size() >= fold_at_) {
    if (folding_active_) {
      // Paced to end by 3/4 of this fill: a fold still running now is starved.
      raise_fold();
      if (!full) return sdk::Status::ok();
      fs = finish_fold(true, sync);
      if (!fs) return fs;
    }
    if (!may_step()) return sdk::Status::ok();
    // Only a round's fold ends the first fill: a store that folded everything on a
    // restore fills from empty again and takes its staggered phase anew (partitions
    // restored together on a new host would otherwise fold together from then on).
    fold_at_ = index_threshold_;
    start_fold();
    took_step();
    if (!background_fold_) return finish_fold(true, sync);
  }
  return sdk::Status::ok();
}

// ---------------------------------------------------------------- restore

sdk::Status PartitionStore::drain_writes() {
  if (!writer_) return sdk::Status::ok();
  rocksdb::Status st = writer_->drain();
  if (!st.ok())
    return sdk::Status::fatal("dedupe: cannot write store " + dir_ + ": " + st.ToString());
  return sdk::Status::ok();
}

// Batches are reused write after write: they hold a round's chunks (megabytes), and a
// fresh one regrew its buffer every round from new, zero-filled pages.
rocksdb::WriteBatch PartitionStore::take_batch(bool sync) {
  if (!sync && writer_) return writer_->take_batch();
  rocksdb::WriteBatch b = std::move(round_batch_);
  b.Clear();
  return b;
}

rocksdb::WriteOptions PartitionStore::write_options(bool sync) const {
  rocksdb::WriteOptions wo;
  wo.disableWAL = !wal_;
  wo.sync = sync && wal_;
  return wo;
}

rocksdb::Status PartitionStore::flush_memtable() {
  rocksdb::FlushOptions fo;
  fo.wait = true;
  return db_->Flush(fo, seq_);
}

sdk::Status PartitionStore::set_changelog_backed(bool on) {
  if (on == !wal_) return sdk::Status::ok();
  sdk::Status st = drain_writes();
  if (!st) return st;
  writer_.reset();  // made again with the new options by the next unsynced write
  if (!on) {
    // What was written without a WAL must not be lost behind later writes a WAL keeps.
    rocksdb::Status fs = flush_memtable();
    if (!fs.ok()) return sdk::Status::fatal("dedupe: cannot flush store " + dir_ + ": " + fs.ToString());
  }
  wal_ = !on;
  return sdk::Status::ok();
}

// Synced, on this thread, after whatever is queued; unsynced (a changelog), queued for
// the store's writer thread (round_writer.hpp), whose failure stops the pipeline at the
// next write.
sdk::Status PartitionStore::write(rocksdb::WriteBatch&& wb, bool sync, uint64_t next_seq) {
  if (!sync) {
    if (!writer_) writer_ = std::make_unique<RoundWriter>(db_, write_options(false));
    rocksdb::Status failed = writer_->error();
    if (!failed.ok())
      return sdk::Status::fatal("dedupe: cannot write store " + dir_ + ": " + failed.ToString());
    writer_->post(std::move(wb), next_seq);
    return sdk::Status::ok();
  }
  sdk::Status ds = drain_writes();
  if (!ds) return ds;
  rocksdb::Status st = db_->Write(write_options(true), &wb);
  if (wal_) ++synced_writes_;
  round_batch_ = std::move(wb);  // for its buffer
  if (!st.ok())
    return sdk::Status::fatal("dedupe: cannot write store " + dir_ + ": " + st.ToString());
  return sdk::Status::ok();
}

sdk::Status PartitionStore::flush_restore_batch() {
  if (restore_wb_->Count() == 0) return sdk::Status::ok();
  sdk::Status ds = drain_writes();
  if (!ds) return ds;
  rocksdb::Status st = db_->Write(write_options(false), restore_wb_.get());
  restore_wb_->Clear();
  if (!st.ok())
    return sdk::Status::fatal("dedupe: cannot write restored claims to store " + dir_ + ": " +
                              st.ToString());
  return sdk::Status::ok();
}

// The changelog's copy of a chunk replaces the local one: the folded form of a local
// chunk must not be written over it (a local round the changelog never committed may
// have used the same first seq).
void PartitionStore::forget_whole_chunk(uint64_t start) {
  auto it = std::lower_bound(whole_chunks_.begin(), whole_chunks_.end(), start,
                             [](const WholeChunk& c, uint64_t s) { return c.start < s; });
  if (it != whole_chunks_.end() && it->start == start) whole_chunks_.erase(it);
}

sdk::Status PartitionStore::restore_chunk(uint64_t first_seq, std::string_view value) {
  ChunkView c;
  if (!parse_chunk(value, c) || c.folded)
    return sdk::Status::fatal("dedupe: unreadable chunk in the changelog of store " + dir_);
  // Locally the chunk keeps only its time: its claims go straight to the claims table,
  // which is folded before the restore counts as done.
  restore_wb_->Put(seq_, seq_key(first_seq), rocksdb::Slice(value.data(), c.time_len));
  forget_whole_chunk(first_seq);
  if (unindexed_.empty()) unindexed_fp_bytes_ = c.fp_bytes;
  unindexed_fp_bytes_ = std::min(unindexed_fp_bytes_, c.fp_bytes);
  // Claims below `indexed` are in files already (found at open: see open()).
  bool whole = for_each_chunk_claim(
      c, first_seq, [&](uint64_t seq, std::string_view key, int64_t offset, uint64_t fp) {
        if (seq >= meta_.indexed)
          unindexed_.upsert(key, XXH3_64bits(key.data(), key.size()), seq, offset, fp);
        ++restored_claims_;
      });
  if (!whole) return sdk::Status::fatal("dedupe: truncated chunk in the changelog of store " + dir_);
  if (unindexed_.size() >= index_threshold_) {
    sdk::Status st = flush_restore_batch();
    if (!st) return st;
    return index_claims();
  }
  if (restore_wb_->GetDataSize() > (8u << 20)) return flush_restore_batch();
  return sdk::Status::ok();
}

sdk::Status PartitionStore::restore_tombstone(uint64_t first_seq) {
  restore_wb_->Delete(seq_, seq_key(first_seq));
  forget_whole_chunk(first_seq);
  return sdk::Status::ok();
}

sdk::Status PartitionStore::restore_meta(std::string_view value) {
  StoreMeta m;
  if (!m.decode(value))
    return sdk::Status::fatal("dedupe: unreadable meta record in the changelog of store " + dir_);
  // `indexed`, `changelog` and `newest_file` describe this copy, not the changelog's writer.
  m.indexed = meta_.indexed;
  m.changelog = meta_.changelog;
  m.newest_file = meta_.newest_file;
  meta_ = m;
  filter_.publish_floor(meta_.floor);
  drop_round();
  return sdk::Status::ok();
}

sdk::Status PartitionStore::follow_new_changelog(int64_t position) {
  sdk::Status st = drain_writes();
  if (!st) return st;
  meta_.changelog = position;
  rocksdb::Status rs = db_->Put(write_options(true), seq_, rocksdb::Slice(), meta_.encode());
  if (wal_) ++synced_writes_;
  if (rs.ok() && !wal_) rs = flush_memtable();
  if (!rs.ok()) return sdk::Status::fatal("dedupe: cannot write store " + dir_ + ": " + rs.ToString());
  return sdk::Status::ok();
}

sdk::Status PartitionStore::finish_restore(int64_t changelog_position, bool flush) {
  sdk::Status st = drain_writes();
  if (!st) return st;
  st = flush_restore_batch();
  if (!st) return st;
  // An assignment whose store was current reads nothing: no flush (a file and a sync
  // per partition per rebalance) for it.
  const bool read_some = changelog_position > meta_.changelog;
  meta_.changelog = std::max(meta_.changelog, changelog_position);
  st = index_claims();
  if (!st) return st;
  // index_claims writes the meta only when it had something to fold.
  rocksdb::Status rs = db_->Put(write_options(true), seq_, rocksdb::Slice(), meta_.encode());
  if (wal_) ++synced_writes_;
  // Without a WAL the restore is durable only once flushed (a restore writes little to
  // the memtable, so no flush may come for long): a kill before then restored it all again
  // at the next open, and in a crash loop every start restored from the same old position.
  if (rs.ok() && !wal_ && flush && read_some) rs = flush_memtable();
  if (!rs.ok())
    return sdk::Status::fatal("dedupe: cannot write store " + dir_ + ": " + rs.ToString());
  load_oldest_chunk_ms();
  drop_round();
  return sdk::Status::ok();
}

StoreGauges PartitionStore::gauges(int64_t now_ms) const {
  StoreGauges g;
  g.keys = static_cast<double>(meta_.next_seq - meta_.floor);
  g.bytes = static_cast<double>(own_totals().bytes + int_property(claims_, "rocksdb.total-sst-files-size") +
                                int_property(seq_, "rocksdb.total-sst-files-size") +
                                int_property(claims_, "rocksdb.cur-size-all-mem-tables") +
                                int_property(seq_, "rocksdb.cur-size-all-mem-tables"));
  if (oldest_chunk_ms_ >= 0 && now_ms > oldest_chunk_ms_)
    g.window_seconds = static_cast<double>(now_ms - oldest_chunk_ms_) / 1000.0;
  g.compacting = compacting_ ? 1 : 0;
  return g;
}

}  // namespace exactly::dedupe
