// A store is a row of folded files that are never compacted: evicted claims leave as
// whole files, and only an SST store that grows past rocksdb.fold.files.max compacts.
// A store keeps the claims format it was made with (claims.format).
#include "dedupe_fixture.hpp"

#include <rocksdb/db.h>

#include "closed_store.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "claims_file.hpp"

namespace dedupe_test {
namespace {

using ::testing::IsEmpty;

// Files of the claims column family per level, read from a closed store.
std::vector<size_t> claim_files_per_level(const fs::path& store) {
  std::vector<size_t> out;
  look_at_closed_store(store, [&](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* claims,
                                  rocksdb::ColumnFamilyHandle*) {
    rocksdb::ColumnFamilyMetaData meta;
    db.GetColumnFamilyMetaData(claims, &meta);
    for (const auto& level : meta.levels) out.push_back(level.files.size());
  });
  return out;
}

size_t total(const std::vector<size_t>& v) {
  size_t n = 0;
  for (size_t x : v) n += x;
  return n;
}

size_t own_files(const fs::path& store) {
  size_t n = 0;
  for (auto& e : fs::directory_iterator(store)) n += e.path().extension() == ".xc";
  return n;
}

class FoldFormats : public DedupeTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(FoldFormats, EvictedClaimsLeaveAsWholeFilesWithoutACompaction) {
  // 1 MiB write buffer: a fold about every 21845 claims, on the pipeline thread so the
  // counts below do not race it. 30000 claims retained: about two files' worth.
  const std::string format = GetParam();
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"},
                 {"rocksdb.fold.background", "false"},
                 {"retention.max.keys", "30000"},
                 {"claims.format", format}};
  auto& t = start(small);
  int64_t off = 0;
  double bytes_early = 0;
  for (int round = 0; round < 12; ++round) {
    EXPECT_EQ(t.process(range(round * 22000, (round + 1) * 22000, off)).kept.size(), 22000u);
    commit_round();
    if (round == 2) bytes_early = metric("dedupe_store_bytes");
  }
  EXPECT_EQ(metric("dedupe_store_compacting"), 0);
  // Without dropping whole files, 12 folds of 22000 would all still be on disk.
  EXPECT_LT(metric("dedupe_store_bytes"), 2 * bytes_early);
  // Retained ids are still duplicates; evicted ones count as new again.
  EXPECT_THAT(t.process(range(12 * 22000 - 20000, 12 * 22000, off)).kept, IsEmpty());
  EXPECT_EQ(t.process(range(0, 1000, off)).kept.size(), 1000u);
  stage_.reset();
  auto files = claim_files_per_level(dir_ / "events-0");
  ASSERT_FALSE(files.empty());
  if (format == "sst") {
    EXPECT_LE(total(files), 4u);
    EXPECT_EQ(own_files(dir_ / "events-0"), 0u);
  } else {
    EXPECT_EQ(total(files), 0u);  // nothing went through RocksDB's claims
    EXPECT_GE(own_files(dir_ / "events-0"), 1u);
    EXPECT_LE(own_files(dir_ / "events-0"), 4u);
  }
  for (size_t l = 1; l + 1 < files.size(); ++l) EXPECT_EQ(files[l], 0u) << "level " << l;
}

INSTANTIATE_TEST_SUITE_P(ClaimsFormat, FoldFormats, ::testing::Values("sst", "own"));

TEST_F(DedupeTest, AStoreOfOwnClaimsFilesAnswersAfterReopenAndStaysInItsFormat) {
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"}};
  auto& t = start(small);
  int64_t off = 0;
  for (int round = 0; round < 3; ++round) {
    t.process(range(round * 22000, (round + 1) * 22000, off));
    commit_round();
  }
  EXPECT_GE(own_files(dir_ / "events-0"), 2u);
  // A fold that died before its rename leaves a temporary file: the next open removes it.
  { std::ofstream((dir_ / "events-0" / "claims-99.xc.tmp").string()) << "partial"; }
  stage_.reset();
  Pairs sst = small;
  sst.emplace_back("claims.format", "sst");
  auto& again = start(sst, {part(0, "events-0", off)});
  EXPECT_FALSE(fs::exists(dir_ / "events-0" / "claims-99.xc.tmp"));
  EXPECT_THAT(again.process(range(0, 66000, off)).kept, IsEmpty());
  EXPECT_EQ(again.process(range(66000, 90000, off)).kept.size(), 24000u);
  commit_round();
  // It still folds into its own files, and nothing into RocksDB's claims.
  const size_t before = own_files(dir_ / "events-0");
  again.process(range(90000, 112000, off));
  commit_round();
  EXPECT_GT(own_files(dir_ / "events-0"), before);
  stage_.reset();
  EXPECT_EQ(total(claim_files_per_level(dir_ / "events-0")), 0u);
}

// The own files of a store, by label (oldest first).
std::vector<fs::path> own_file_paths(const fs::path& store) {
  std::error_code ec;
  std::vector<fs::path> out;
  for (const auto& f : exactly::dedupe::list_claims_files(store.string(), ec))
    if (f.kind == exactly::dedupe::ClaimsFileName::whole) out.push_back(f.path);
  EXPECT_FALSE(ec) << ec.message();
  return out;
}

TEST_F(DedupeTest, AStorePastClaimsFilesMaxMergesNeighboursAndAnswersAsBefore) {
  // A fold about every 21845 claims; past 4 files, two neighbours merge (on the merge
  // thread, adopted between rounds).
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"},
                 {"rocksdb.fold.background", "false"},
                 {"claims.files.max", "4"}};
  auto& t = start(small);
  int64_t off = 0;
  const int64_t n = 12 * 22000;
  for (int round = 0; round < 12; ++round) {
    ASSERT_EQ(t.process(range(round * 22000, (round + 1) * 22000, off)).kept.size(), 22000u);
    commit_round();
  }
  // Rounds of one new id each until the last merge is adopted (or 10 s).
  int64_t next = n;
  for (int i = 0; i < 500 && (own_files(dir_ / "events-0") > 4 || metric("dedupe_merges_total") == 0); ++i) {
    t.process(range(next, next + 1, off));
    ++next;
    commit_round();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(metric("dedupe_merges_total"), 5);  // 12 folds down to 4 files
  EXPECT_GT(metric("dedupe_merge_cpu_seconds_total"), 0);
  EXPECT_LE(own_files(dir_ / "events-0"), 4u);
  // Every id seen is a duplicate still; new ones pass.
  EXPECT_THAT(t.process(range(0, next, off)).kept, IsEmpty());
  EXPECT_EQ(t.process(range(next, next + 5000, off)).kept.size(), 5000u);
  commit_round();
  stage_.reset();
  auto& again = start(small, {part(0, "events-0", off)});
  EXPECT_THAT(again.process(range(0, next + 5000, off)).kept, IsEmpty());
  EXPECT_EQ(again.process(range(next + 5000, next + 6000, off)).kept.size(), 1000u);
}

TEST_F(DedupeTest, ClaimsFilesMaxChangesInPlaceOnAReload) {
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"}};
  auto& t = start(small);
  int64_t off = 0;
  for (int round = 0; round < 6; ++round) {
    t.process(range(round * 22000, (round + 1) * 22000, off));
    commit_round();
  }
  const size_t before = own_files(dir_ / "events-0");
  ASSERT_GE(before, 5u);  // 256 by default: nothing merged
  Pairs two = small;
  two.emplace_back("claims.files.max", "2");
  ASSERT_TRUE(t.reconfigure(config(two)).is_ok());  // no reopen of the stores
  int64_t next = 6 * 22000;
  for (int i = 0; i < 500 && (own_files(dir_ / "events-0") > 2 || metric("dedupe_merges_total") == 0); ++i) {
    // A fold starts the merges; rounds of one id adopt them.
    const int64_t n = i == 0 ? 22000 : 1;
    t.process(range(next, next + n, off));
    next += n;
    commit_round();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(metric("dedupe_merges_total"), 1);
  EXPECT_LE(own_files(dir_ / "events-0"), 2u);
  EXPECT_THAT(t.process(range(0, next, off)).kept, IsEmpty());
}

TEST_F(DedupeTest, InputsThatACrashLeftBesideTheirMergedFileAreRemovedAtOpen) {
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"}};
  auto& t = start(small);
  int64_t off = 0;
  for (int round = 0; round < 4; ++round) {
    t.process(range(round * 22000, (round + 1) * 22000, off));
    commit_round();
  }
  stage_.reset();
  auto files = own_file_paths(dir_ / "events-0");
  ASSERT_GE(files.size(), 4u);
  // A merge of every file but the oldest, renamed into place, and a crash before its
  // inputs were removed.
  std::vector<exactly::dedupe::ClaimsFile> inputs(files.size() - 1);
  std::vector<const exactly::dedupe::ClaimsFile*> raw;
  std::string error;
  for (size_t i = 1; i < files.size(); ++i) {
    ASSERT_TRUE(inputs[i - 1].open(files[i].string(), true, error)) << error;
    raw.push_back(&inputs[i - 1]);
  }
  exactly::dedupe::ClaimsFile oldest;
  ASSERT_TRUE(oldest.open(files[0].string(), true, error)) << error;
  exactly::dedupe::ClaimsFileStats stats;
  ASSERT_TRUE(exactly::dedupe::merge_claims_files(files.back().string(), raw, 0,
                                                  1 + oldest.stats().seq_end, stats, error))
      << error;
  inputs.clear();
  ASSERT_EQ(own_file_paths(dir_ / "events-0").size(), files.size());

  auto& again = start(small, {part(0, "events-0", off)});
  auto left = own_file_paths(dir_ / "events-0");
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0], files[0]);
  EXPECT_EQ(left[1], files.back());
  EXPECT_THAT(again.process(range(0, 4 * 22000, off)).kept, IsEmpty());
  EXPECT_EQ(again.process(range(4 * 22000, 4 * 22000 + 1000, off)).kept.size(), 1000u);
}

TEST_F(DedupeTest, ADamagedOwnClaimsFileStopsTheStoreWithItsName) {
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"}};
  auto& t = start(small);
  int64_t off = 0;
  t.process(range(0, 30000, off));
  commit_round();
  stage_.reset();
  fs::path damaged;
  for (auto& e : fs::directory_iterator(dir_ / "events-0"))
    if (e.path().extension() == ".xc") damaged = e.path();
  ASSERT_FALSE(damaged.empty());
  {
    std::fstream f(damaged.string(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  FakeHost other;
  TransformHarness reopened(library(), "dedupe", config(small), &other);
  ASSERT_TRUE(reopened.ok());
  auto st = reopened.assign({part(0, "events-0", off)});
  ASSERT_FALSE(st.is_ok());
  EXPECT_THAT(st.message(), ::testing::HasSubstr("damaged claims file"));
  EXPECT_THAT(st.message(), ::testing::HasSubstr(damaged.filename().string()));
}

TEST_F(DedupeTest, AStoreOfMoreFilesThanFoldFilesMaxCompactsAndStillAnswers) {
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"},
                 {"rocksdb.fold.background", "false"},
                 {"rocksdb.fold.files.max", "2"},
                 {"claims.format", "sst"}};
  auto& t = start(small);
  int64_t off = 0;
  for (int round = 0; round < 2; ++round) {
    t.process(range(round * 22000, (round + 1) * 22000, off));
    commit_round();
  }
  EXPECT_EQ(metric("dedupe_store_compacting"), 0);
  for (int round = 2; round < 5; ++round) {
    t.process(range(round * 22000, (round + 1) * 22000, off));
    commit_round();
  }
  EXPECT_EQ(metric("dedupe_store_compacting"), 1);
  // Every id is still known, whether or not a compaction has run yet.
  EXPECT_THAT(t.process(range(0, 5 * 22000, off)).kept, IsEmpty());
  commit_round();
  // Reopened with the defaults (claims.format own), a store that has compacted keeps
  // compacting.
  auto& again = start({{"rocksdb.write.buffer.size", "1048576"}}, {part(0, "events-0", off)});
  EXPECT_THAT(again.process(range(0, 5 * 22000, off)).kept, IsEmpty());
}

TEST_F(DedupeTest, AStoreMadeBeforeFoldedFilesReopensAsALeveledStore) {
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"}};
  Pairs sst = small;
  sst.emplace_back("claims.format", "sst");
  auto& t = start(sst);
  int64_t off = 0;
  t.process(range(0, 50000, off));
  commit_round();
  stage_.reset();
  {
    // What an earlier version left: a leveled store whose claims were compacted down.
    rocksdb::Options o;
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
        {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
        {"seq", rocksdb::ColumnFamilyOptions()}};
    std::vector<rocksdb::ColumnFamilyHandle*> h;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, (dir_ / "events-0").string(), cfs, &h, &db).ok());
    rocksdb::CompactRangeOptions cro;
    cro.change_level = true;
    cro.target_level = 6;
    ASSERT_TRUE(db->CompactRange(cro, h[0], nullptr, nullptr).ok());
    for (auto* x : h) db->DestroyColumnFamilyHandle(x);
    delete db;
  }
  EXPECT_GT(claim_files_per_level(dir_ / "events-0").back(), 0u);
  // Reopened with the default claims.format (own): its claims are in SST files, so it
  // stays as it is.
  auto& again = start(small, {part(0, "events-0", off)});
  EXPECT_THAT(again.process(range(0, 50000, off)).kept, IsEmpty());
  EXPECT_EQ(again.process(range(50000, 50010, off)).kept.size(), 10u);
  commit_round();
  EXPECT_EQ(metric("dedupe_store_compacting"), 1);
}

}  // namespace
}  // namespace dedupe_test
