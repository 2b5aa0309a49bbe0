// Claims are written per round into the sequence index, gathered in memory, and folded
// into the claims column family in bulk. Both paths must answer the same way, also
// after a crash that leaves claims unfolded.
#include "dedupe_fixture.hpp"

#include <rocksdb/db.h>

#include <chrono>
#include <thread>

#include "claim_codec.hpp"
#include "closed_store.hpp"

namespace dedupe_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Records of ids `from`..`to` in partition 0, then the same ids in partition 1.
struct TwoPartitions {
  int64_t off0 = 0, off1 = 0;
  std::vector<OwnedRecord> operator()(int from, int to) {
    auto a = range(from, to, off0, 0);
    auto b = range(from, to, off1, 1);
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
};

// The chunks of a closed store's sequence index: their first seqs, and how many still
// hold their claims (not folded).
struct SeqIndex {
  std::vector<uint64_t> starts;
  size_t whole = 0;
};
SeqIndex read_seq_index(const fs::path& store) {
  SeqIndex out;
  look_at_closed_store(store, [&](rocksdb::DB& db, rocksdb::ColumnFamilyHandle*,
                                  rocksdb::ColumnFamilyHandle* seq) {
    std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions(), seq));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (it->key().size() != 8) continue;  // the meta
      out.starts.push_back(exactly::dedupe::seq_from_key(std::string_view(it->key().data(), 8)));
      exactly::dedupe::ChunkView c;
      EXPECT_TRUE(exactly::dedupe::parse_chunk(std::string_view(it->value().data(), it->value().size()), c));
      out.whole += !c.folded;
    }
  });
  return out;
}

TEST_F(DedupeTest, FoldedChunksKeepOnlyTheirTimeAndEvictedOnesAreNotWrittenBack) {
  // The fold runs beside the rounds, and rounds keep evicting (15,000 claims kept, a fold
  // every ~21,845): chunks of a fold's claims are evicted before it is adopted. The
  // adoption shortens the folded chunks to their time and must not bring evicted ones
  // back. The same for the unfolded chunks a reopened crash image reads back.
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"retention.max.keys", "15000"}};
  auto& t = start(small);
  int64_t off = 0;
  for (int r = 0; r < 16; ++r) {
    t.process(range(r * 4000, (r + 1) * 4000, off));
    commit_round();
  }
  fs::create_directories(dir_ / "image");
  copy_live_store(dir_ / "events-0", dir_ / "image" / "events-0");
  stage_.reset();  // closes the store: the rest is folded
  // A claim's seq counts claims from offset 0: the floor is `next` - 15,000, and only
  // the chunk that straddles it (if one does) may start below it.
  auto check = [](const SeqIndex& s, int64_t next) {
    EXPECT_EQ(s.whole, 0u);
    ASSERT_FALSE(s.starts.empty());
    const uint64_t floor = static_cast<uint64_t>(next - 15000);
    EXPECT_LE(std::count_if(s.starts.begin(), s.starts.end(), [&](uint64_t x) { return x < floor; }), 1)
        << "first chunk " << s.starts.front() << ", floor " << floor;
  };
  check(read_seq_index(dir_ / "events-0"), off);

  FakeHost other;
  Pairs image = small;
  image.emplace_back("state.dir", (dir_ / "image").string());
  {
    TransformHarness crashed(library(), "dedupe", config(image), &other);
    ASSERT_TRUE(crashed.ok());
    ASSERT_TRUE(crashed.assign({part(0, "events-0", off)}).is_ok());
    int64_t off2 = off;
    // The newest 15,000 ids are known (folded or read back), older ones were evicted.
    EXPECT_THAT(crashed.process(range(49000, 64000, off2)).kept, IsEmpty());
    EXPECT_EQ(crashed.process(range(0, 1000, off2)).kept.size(), 1000u);
    crashed.process(range(100000, 102000, off2));
    ASSERT_TRUE(crashed.prepare_commit().is_ok());
    other.commit_state();
    ASSERT_TRUE(crashed.commit().is_ok());
  }
  // Claims only: 64,000 before, then ids 0-999 again and 2,000 new ones. The chunks
  // read back (the image's claims from the last fold on, ~48,000) are still live.
  const SeqIndex reopened = read_seq_index(dir_ / "image" / "events-0");
  check(reopened, 64000 + 1000 + 2000);
  EXPECT_GE(reopened.starts.size(), 3u);
}

TEST_F(DedupeTest, FoldedAndUnfoldedClaimsSurviveACrashImage) {
  // 1 MiB write buffer: claims are folded once about 21845 have gathered; on the
  // pipeline thread, so that the copy below never races a fold.
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"}};
  auto& t = start(small);
  int64_t off = 0;
  t.process(range(0, 15000, off));
  commit_round();
  EXPECT_EQ(folded_files(dir_ / "events-0"), 0u);
  t.process(range(15000, 25000, off));
  commit_round();
  EXPECT_GE(folded_files(dir_ / "events-0"), 1u);  // folded
  const int64_t round3 = off;
  t.process(range(25000, 25500, off));
  commit_round();
  // Copy the store while it is open: what a kill -9 right now would leave behind.
  // (Into another state directory: this one is locked while the stage lives.)
  fs::create_directories(dir_ / "image");
  copy_live_store(dir_ / "events-0", dir_ / "image" / "events-9");

  FakeHost other;
  Pairs image = small;
  image.emplace_back("state.dir", (dir_ / "image").string());
  TransformHarness crashed(library(), "dedupe", config(image), &other);
  ASSERT_TRUE(crashed.ok());
  auto st = crashed.assign({part(0, "events-9", off)});
  ASSERT_TRUE(st.is_ok()) << st.message();
  int64_t off2 = off;
  // Every id of the three rounds is known; a replay of round 3's first record re-emits.
  std::vector<OwnedRecord> probe = {event("id-1", off2++), event("id-24999", off2++),
                                    event("id-25499", off2++), event("id-25000", round3),
                                    event("id-new", off2++)};
  EXPECT_THAT(crashed.process(probe).kept, ElementsAre(3u, 4u));
  EXPECT_THAT(crashed.process(range(0, 25500, off2)).kept, IsEmpty());
  EXPECT_EQ(other.metric("dedupe_duplicates_total{partition=events-9}"), 25503);
}

TEST_F(DedupeTest, PartitionsThatReachTheThresholdTogetherFoldInTurns) {
  // Both partitions pass the ~21845-claim threshold in the same round: one folds in that
  // round, the other in the next, so no round carries every partition's fold.
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"}};
  auto& t = start(small, {part(0, "events-0"), part(1, "events-1")});
  TwoPartitions both;
  t.process(both(0, 25000));
  commit_round();
  EXPECT_EQ(folded_files(dir_ / "events-0") + folded_files(dir_ / "events-1"), 1u);
  t.process(both(25000, 25010));
  commit_round();
  EXPECT_GE(folded_files(dir_ / "events-0"), 1u);
  EXPECT_GE(folded_files(dir_ / "events-1"), 1u);
  // Every id is still known in both, folded or not.
  EXPECT_THAT(t.process(both(0, 25010)).kept, IsEmpty());
}

TEST_F(DedupeTest, PartitionsFoldTheirFirstFillsAtStaggeredSizesAndKeepThePhase) {
  // Threshold ~21,845 claims. Partition 1 folds its first fill at 3/4 of it (16,384),
  // partition 0 at the whole threshold; every later fill of either is a whole threshold,
  // so the two stay a quarter of a cycle apart instead of folding in the same rounds.
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"}};
  auto& t = start(small, {part(0, "events-0"), part(1, "events-1")});
  TwoPartitions both;
  auto files = [&] {
    return std::make_pair(folded_files(dir_ / "events-0"), folded_files(dir_ / "events-1"));
  };
  t.process(both(0, 17000));
  commit_round();
  EXPECT_EQ(files(), std::make_pair(size_t{0}, size_t{1}));
  t.process(both(17000, 22000));
  commit_round();
  EXPECT_EQ(files(), std::make_pair(size_t{1}, size_t{1}));
  t.process(both(22000, 38000));  // partition 1: 21,000 since its fold, below the threshold
  commit_round();
  EXPECT_EQ(files(), std::make_pair(size_t{1}, size_t{1}));
  t.process(both(38000, 40000));
  commit_round();
  EXPECT_EQ(files(), std::make_pair(size_t{1}, size_t{2}));
  EXPECT_THAT(t.process(both(0, 40000)).kept, IsEmpty());
}

TEST_F(DedupeTest, NewIdsSkipTheStoreReadAndStoredIdsAreStillFoundAfterReopen) {
  // New ids are answered by the in-memory presence filter (no RocksDB read); ids folded
  // into the store are found, also by a stage reopened on it (while and after its
  // filter is rebuilt from the store in the background).
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}};
  auto& t = start(small);
  int64_t off = 0;
  t.process(range(0, 25000, off));
  commit_round();
  t.process(range(25000, 50000, off));
  commit_round();
  // The fold runs beside, at SCHED_IDLE: on a machine kept busy by other tests it may
  // wait long for a free core (nothing here waits for it, so nothing raises it).
  for (int i = 0; i < 600 && folded_files(dir_ / "events-0") == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GE(folded_files(dir_ / "events-0"), 1u);
  EXPECT_GE(metric("dedupe_lookups_skipped_total"), 25000);

  FakeHost other;
  fs::create_directories(dir_ / "copy");
  stage_.reset();  // closes the store (folds the rest) so that a copy can open it
  copy_live_store(dir_ / "events-0", dir_ / "copy" / "events-0");
  Pairs copy = small;
  copy.emplace_back("state.dir", (dir_ / "copy").string());
  TransformHarness reopened(library(), "dedupe", config(copy), &other);
  ASSERT_TRUE(reopened.ok());
  ASSERT_TRUE(reopened.assign({part(0, "events-0", off)}).is_ok());
  int64_t off2 = off;
  EXPECT_THAT(reopened.process(range(0, 50000, off2)).kept, IsEmpty());
  EXPECT_EQ(other.metric("dedupe_duplicates_total{partition=events-0}"), 50000);
  // Once the filter is built, new ids skip the store again.
  double skipped = 0;
  for (int i = 0; i < 50 && skipped == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(reopened.process(range(100000 + i * 100, 100000 + i * 100 + 100, off2)).kept.size(), 100u);
    skipped = other.metric("dedupe_lookups_skipped_total{partition=events-0}");
  }
  EXPECT_GT(skipped, 0);
  EXPECT_THAT(reopened.process(range(0, 50000, off2)).kept, IsEmpty());
}

TEST_F(DedupeTest, ClosingAStoreWhoseLastFoldGrowsThePresenceFilterIsClean) {
  // The presence filter holds 458,752 keys in its first three layers (65,536 doubling);
  // a fourth one makes the store rebuild it on a thread that iterates the store. Here the
  // fold that adds the fourth layer is the one the store does while closing: it must not
  // start that rebuild (its iterator would outlive the database: RocksDB aborts).
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}};  // folds at ~21,845 claims
  auto& t = start(small);
  int64_t off = 0;
  for (int r = 0; r < 9; ++r) {  // 450,000 ids, each round folded at its commit
    t.process(range(r * 50000, (r + 1) * 50000, off));
    commit_round();
  }
  t.process(range(450000, 470000, off));  // 20,000: below the fold size, folded at close
  commit_round();
  stage_.reset();  // closes the store: an abort here kills the test binary
  auto& again = start(small);
  EXPECT_THAT(again.process(range(0, 470000, off)).kept, IsEmpty());
}

TEST_F(DedupeTest, ABackgroundFoldAnswersAsTheInlineFoldDoes) {
  // Rounds of 6,000 new ids, each followed at once by repeats of the round before and of
  // one long folded: right after a commit starts a fold, the repeats are answered from
  // the table being folded, the column family, or both. Every answer and the counts
  // must match the same run with the fold on the pipeline thread, before and after a
  // reopen.
  auto run = [&](const char* background) {
    Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", background}};
    const double dups0 = metric("dedupe_duplicates_total");  // counters add up across runs
    auto& t = start(small);
    int64_t off = 0;
    std::vector<size_t> kept;
    for (int r = 0; r < 30; ++r) {
      for (size_t k : t.process(range(r * 6000, (r + 1) * 6000, off)).kept) kept.push_back(k);
      commit_round();
      const int back = r * 6000 - 3000, old = r > 8 ? (r - 8) * 6000 : 0;
      for (size_t k : t.process(range(std::max(back, 0), r * 6000 + 3000, off)).kept) kept.push_back(k);
      for (size_t k : t.process(range(old, old + 500, off)).kept) kept.push_back(k);
      commit_round();
    }
    const double dups = metric("dedupe_duplicates_total") - dups0;
    auto& again = start(small, {part(0, "events-0", off)});
    std::vector<size_t> reopened = again.process(range(0, 180000, off)).kept;
    std::vector<size_t> fresh = again.process(range(180000, 181000, off)).kept;
    return std::make_tuple(kept, dups, reopened, fresh.size());
  };
  auto [kept_bg, dups_bg, reopened_bg, fresh_bg] = run("true");
  stage_.reset();
  fs::remove_all(dir_ / "events-0");
  auto [kept_in, dups_in, reopened_in, fresh_in] = run("false");
  EXPECT_EQ(kept_bg.size(), 180000u);  // each id once, every repeat dropped
  EXPECT_EQ(kept_bg, kept_in);
  EXPECT_EQ(dups_bg, dups_in);
  EXPECT_GT(dups_bg, 30 * 3000.0);
  EXPECT_THAT(reopened_bg, IsEmpty());
  EXPECT_THAT(reopened_in, IsEmpty());
  EXPECT_EQ(fresh_bg, 1000u);
  EXPECT_EQ(fresh_in, 1000u);
}

TEST_F(DedupeTest, EvictionAppliesToFoldedClaims) {
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"retention.max.keys", "20000"}};
  auto& t = start(small);
  int64_t off = 0;
  for (int r = 0; r < 3; ++r) {
    t.process(range(r * 10000, (r + 1) * 10000, off));
    commit_round();
  }
  EXPECT_EQ(metric("dedupe_store_keys"), 20000);
  // Ids 0..9999 were the oldest: evicted. The rest are known.
  EXPECT_THAT(t.process(range(9999, 10001, off)).kept, ElementsAre(0u));
  commit_round();
  auto& t2 = start(small, {part(0, "events-0", off)});
  // id-9999 was claimed again (the newest now), which pushed id-10000 out.
  EXPECT_THAT(t2.process(range(29999, 30000, off)).kept, IsEmpty());
  EXPECT_THAT(t2.process(range(9999, 10000, off)).kept, IsEmpty());
  EXPECT_THAT(t2.process(range(5000, 5001, off)).kept, ElementsAre(0u));
}

}  // namespace
}  // namespace dedupe_test
