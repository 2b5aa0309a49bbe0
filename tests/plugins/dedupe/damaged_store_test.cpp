// A store whose contents cannot be read at open (on.store.damaged). With a changelog the
// partition's claims are in the cluster: the store is moved aside and the partition
// restored from the changelog, as Kafka Streams wipes a corrupted task's state and
// restores it. Before, the partition (and with it the pipeline) was refused until an
// operator moved the directory by hand. Through the real .so; the harness's FakeHost
// plays the sink that keeps the changelog.
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "dedupe_fixture.hpp"

using namespace dedupe_test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

namespace {

class DamagedStoreTest : public DedupeTest {
 protected:
  void SetUp() override {
    DedupeTest::SetUp();
    host_.enable_state();
  }
  // Small fills and folds on the committing thread: the claims are in own claims files
  // by the end of the first round.
  Pairs with_changelog(Pairs extra = {}) {
    extra.emplace_back("changelog", "on");
    extra.emplace_back("changelog.topic", "cl");
    extra.emplace_back("changelog.catch.up.timeout", "200");
    extra.emplace_back("rocksdb.write.buffer.size", "1048576");
    extra.emplace_back("rocksdb.fold.background", "false");
    return extra;
  }
  // 30,000 ids claimed and committed, then the stage closed.
  int64_t claim_and_close(const Pairs& cfg) {
    auto& t = start(cfg);
    int64_t off = 0;
    EXPECT_EQ(t.process(range(0, 30000, off)).kept.size(), 30000u);
    EXPECT_TRUE(stage_->positions({part(0, "events-0", off)}).is_ok());
    commit_round();
    stage_.reset();
    return off;
  }
  // One byte changed in the middle of one of the store's claims files: its checksum fails.
  fs::path damage_a_claims_file() {
    fs::path damaged;
    for (auto& e : fs::directory_iterator(dir_ / "events-0"))
      if (e.path().extension() == ".xc") damaged = e.path();
    EXPECT_FALSE(damaged.empty()) << "no claims file to damage";
    std::fstream f(damaged.string(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
    return damaged;
  }
  std::vector<fs::path> set_aside() const {
    std::vector<fs::path> out;
    for (auto& e : fs::directory_iterator(dir_))
      if (e.path().filename().string().rfind("events-0.damaged-", 0) == 0) out.push_back(e.path());
    return out;
  }
};

TEST_F(DamagedStoreTest, WithAChangelogTheStoreIsSetAsideAndThePartitionRestored) {
  const Pairs cfg = with_changelog();
  const int64_t off = claim_and_close(cfg);
  const fs::path damaged = damage_a_claims_file();
  host_.logs.clear();

  auto& again = start(cfg, {part(0, "events-0", off)});
  ASSERT_EQ(set_aside().size(), 1u) << all_logs(host_);
  EXPECT_TRUE(fs::exists(set_aside()[0] / damaged.filename())) << "the damaged store is kept for inspection";
  EXPECT_TRUE(logged(host_, "checksum mismatch")) << all_logs(host_);
  EXPECT_TRUE(logged(host_, "restored from changelog cl")) << all_logs(host_);
  EXPECT_EQ(metric("dedupe_stores_set_aside_total"), 1);
  EXPECT_EQ(metric("dedupe_restored_claims_total"), 30000);
  // Every id seen before is a duplicate at a later offset (at its own, a replay of its
  // owner, it would pass again: owner-aware); a new one passes.
  int64_t next = off;
  EXPECT_THAT(again.process(range(0, 30000, next)).kept, IsEmpty());
  EXPECT_THAT(again.process(range(30000, 30001, next)).kept, ElementsAre(0u));
}

// RocksDB's own corruption (its CURRENT file garbled), in an assignment of two whose
// stores open side by side: only the damaged one is set aside.
TEST_F(DamagedStoreTest, RocksDbCorruptionAmongStoresOpenedSideBySide) {
  const Pairs cfg = with_changelog();
  auto& t = start(cfg, {part(0, "events-0"), part(1, "events-1")});
  int64_t off0 = 0, off1 = 0;
  EXPECT_EQ(t.process(range(0, 1000, off0, 0)).kept.size(), 1000u);
  EXPECT_EQ(t.process(range(1000, 2000, off1, 1)).kept.size(), 1000u);
  EXPECT_TRUE(stage_->positions({part(0, "events-0", off0), part(1, "events-1", off1)}).is_ok());
  commit_round();
  stage_.reset();
  {
    std::ofstream current(dir_ / "events-1" / "CURRENT", std::ios::trunc);
    current << "not a manifest name";
  }
  host_.logs.clear();
  auto& again = start(cfg, {part(0, "events-0", off0), part(1, "events-1", off1)});
  EXPECT_TRUE(logged(host_, "side by side")) << all_logs(host_);
  EXPECT_TRUE(logged(host_, "Corruption")) << all_logs(host_);
  EXPECT_EQ(metric("dedupe_stores_set_aside_total", "events-1"), 1);
  EXPECT_EQ(metric("dedupe_stores_set_aside_total", "events-0"), 0);
  EXPECT_EQ(metric("dedupe_restored_claims_total", "events-1"), 1000);
  EXPECT_THAT(again.process(range(1000, 2000, off1, 1)).kept, IsEmpty());
  EXPECT_THAT(again.process(range(0, 1000, off0, 0)).kept, IsEmpty());
}

TEST_F(DamagedStoreTest, OnStoreDamagedFailRefusesThePartitionAndKeepsTheStore) {
  const Pairs cfg = with_changelog({{"on.store.damaged", "fail"}});
  const int64_t off = claim_and_close(cfg);
  damage_a_claims_file();
  TransformHarness stage(library(), "dedupe", config(cfg), &host_);
  ASSERT_TRUE(stage.ok());
  auto st = stage.assign({part(0, "events-0", off)});
  ASSERT_FALSE(st.is_ok());
  EXPECT_THAT(st.message(), HasSubstr("damaged claims file"));
  EXPECT_TRUE(set_aside().empty());
  EXPECT_TRUE(fs::exists(dir_ / "events-0"));
}

// A store damaged again within the hour after being restored (a failing disk) is refused,
// not moved aside in a loop that fills the disk with copies.
TEST_F(DamagedStoreTest, AStoreDamagedAgainSoonAfterIsRefusedNotSetAsideAgain) {
  const Pairs cfg = with_changelog();
  const int64_t off = claim_and_close(cfg);
  damage_a_claims_file();
  auto& restored = start(cfg, {part(0, "events-0", off)});
  int64_t next = off;
  EXPECT_EQ(restored.process(range(30000, 60000, next)).kept.size(), 30000u);
  EXPECT_TRUE(stage_->positions({part(0, "events-0", next)}).is_ok());
  commit_round();
  stage_.reset();
  damage_a_claims_file();
  TransformHarness stage(library(), "dedupe", config(cfg), &host_);
  ASSERT_TRUE(stage.ok());
  auto st = stage.assign({part(0, "events-0", next)});
  ASSERT_FALSE(st.is_ok());
  EXPECT_THAT(st.message(), HasSubstr("damaged again so soon"));
  EXPECT_EQ(set_aside().size(), 1u);
}

// A file the store's own bookkeeping names is gone: its MANIFEST (QA: such a store made
// RocksDB report "No such file", which was taken for the system's refusal, and the
// pipeline restarted for ever instead of restoring the partition).
TEST_F(DamagedStoreTest, AStoreWithoutItsManifestIsDamageAndThePartitionRestored) {
  const Pairs cfg = with_changelog();
  const int64_t off = claim_and_close(cfg);
  int removed = 0;
  for (auto& e : fs::directory_iterator(dir_ / "events-0"))
    if (e.path().filename().string().rfind("MANIFEST-", 0) == 0) removed += fs::remove(e.path());
  ASSERT_EQ(removed, 1);
  host_.logs.clear();

  auto& again = start(cfg, {part(0, "events-0", off)});
  ASSERT_EQ(set_aside().size(), 1u) << all_logs(host_);
  EXPECT_TRUE(logged(host_, "MANIFEST")) << all_logs(host_);
  EXPECT_EQ(metric("dedupe_restored_claims_total"), 30000);
  int64_t next = off;
  EXPECT_THAT(again.process(range(0, 30000, next)).kept, IsEmpty());
}

// Damage that RocksDB finds only when it reads a block (it opens such a store without
// complaint): the lookup fails, the store is marked, and the next open treats it as
// damaged. Before, the pipeline restarted into the same failed lookup for ever (QA).
TEST_F(DamagedStoreTest, CorruptionALookupFindsMarksTheStoreAndTheNextOpenSetsItAside) {
  const Pairs cfg = with_changelog({{"claims.format", "sst"}});
  auto& t = start(cfg);
  int64_t off = 0;
  ASSERT_EQ(t.process(range(0, 30000, off)).kept.size(), 30000u);
  ASSERT_TRUE(stage_->positions({part(0, "events-0", off)}).is_ok());
  commit_round();
  // Every folded table's blocks zeroed past its first 4 KiB: a lookup of an old id reads
  // one and fails its checksum.
  int tables = 0;
  for (auto& e : fs::directory_iterator(dir_ / "events-0")) {
    if (e.path().extension() != ".sst" || fs::file_size(e.path()) < 64 * 1024) continue;
    std::fstream f(e.path().string(), std::ios::in | std::ios::out | std::ios::binary);
    const std::string zeros(fs::file_size(e.path()) / 2, '\0');
    f.seekp(4096);
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
    ++tables;
  }
  ASSERT_GE(tables, 1) << "no folded table to damage";
  exactly::sdk::Status st;
  int64_t next = off;
  t.process(range(0, 30000, next), &st);
  ASSERT_FALSE(st.is_ok()) << "a lookup read a zeroed block without failing";
  EXPECT_THAT(st.message(), HasSubstr("Corruption"));
  EXPECT_THAT(st.message(), HasSubstr("marked damaged"));
  stage_.reset();
  host_.logs.clear();

  auto& again = start(cfg, {part(0, "events-0", off)});
  ASSERT_EQ(set_aside().size(), 1u) << all_logs(host_);
  EXPECT_TRUE(logged(host_, "found damaged while running")) << all_logs(host_);
  EXPECT_EQ(metric("dedupe_restored_claims_total"), 30000);
  next = off;
  EXPECT_THAT(again.process(range(0, 30000, next)).kept, IsEmpty());
}

// Without a changelog the marked store is refused, naming it, and stays where it is.
TEST_F(DamagedStoreTest, AMarkedStoreWithoutAChangelogIsRefusedNamingIt) {
  const Pairs cfg = {{"changelog", "off"}, {"rocksdb.write.buffer.size", "1048576"}};
  auto& t = start(cfg);
  int64_t off = 0;
  ASSERT_EQ(t.process(range(0, 1000, off)).kept.size(), 1000u);
  commit_round();
  stage_.reset();
  {
    std::ofstream mark(dir_ / "events-0" / "DAMAGED");
    mark << "dedupe: lookup in store failed: Corruption: block checksum mismatch";
  }
  TransformHarness stage(library(), "dedupe", config(cfg), &host_);
  ASSERT_TRUE(stage.ok());
  auto st = stage.assign({part(0, "events-0", off)});
  ASSERT_FALSE(st.is_ok());
  EXPECT_THAT(st.message(), HasSubstr((dir_ / "events-0").string() + " was found damaged while running"));
  EXPECT_THAT(st.message(), HasSubstr("block checksum mismatch"));
  EXPECT_TRUE(set_aside().empty());
}

// A store that cannot be opened for a reason of the system's (here a claims file that
// cannot be mapped: a directory in its place), not for what a file holds, is not damaged:
// it is never moved aside.
TEST_F(DamagedStoreTest, AFileTheSystemRefusesIsNotDamageAndIsNotSetAside) {
  const Pairs cfg = with_changelog();
  const int64_t off = claim_and_close(cfg);
  fs::path file;
  for (auto& e : fs::directory_iterator(dir_ / "events-0"))
    if (e.path().extension() == ".xc") file = e.path();
  ASSERT_FALSE(file.empty());
  fs::remove(file);
  fs::create_directory(file);
  TransformHarness stage(library(), "dedupe", config(cfg), &host_);
  ASSERT_TRUE(stage.ok());
  auto st = stage.assign({part(0, "events-0", off)});
  ASSERT_FALSE(st.is_ok());
  EXPECT_THAT(st.message(), HasSubstr("cannot map"));
  EXPECT_TRUE(set_aside().empty());
}

}  // namespace

// A claims file gone from the store (deleted by hand, a partial copy of the directory):
// the ids in it would pass again. Each file names the one it follows, and the meta the
// newest a fold made: one missing between two others, or the newest while older ones
// remain, is told at open and handled as damage (the store does neither itself: eviction
// removes the oldest first, a merge renames its file over its newest input).
class MissingClaimsFileTest : public DamagedStoreTest {
 protected:
  // Rounds of 20,000 new ids until the store has at least four claims files.
  int64_t claim_files_and_close(const Pairs& cfg, int& ids) {
    auto& t = start(cfg);
    int64_t off = 0;
    ids = 0;
    for (int round = 0; round < 30 && claims_files().size() < 4; ++round) {
      EXPECT_EQ(t.process(range(ids, ids + 20000, off)).kept.size(), 20000u);
      ids += 20000;
      EXPECT_TRUE(stage_->positions({part(0, "events-0", off)}).is_ok());
      commit_round();
    }
    EXPECT_GE(claims_files().size(), 4u);
    stage_.reset();
    return off;
  }
  std::vector<fs::path> claims_files() const {
    std::vector<std::pair<uint64_t, fs::path>> found;
    for (auto& e : fs::directory_iterator(dir_ / "events-0"))
      if (e.path().extension() == ".xc") {
        const std::string n = e.path().stem().string();  // claims-<label>
        found.emplace_back(std::stoull(n.substr(n.find('-') + 1)), e.path());
      }
    std::sort(found.begin(), found.end());
    std::vector<fs::path> out;
    for (auto& [label, p] : found) out.push_back(p);
    return out;
  }
  // The message of an assign the stage refuses (the test fails if it is not refused).
  std::string refused_assign(const Pairs& cfg, int64_t off) {
    TransformHarness stage(library(), "dedupe", config(cfg), &host_);
    EXPECT_TRUE(stage.ok());
    auto st = stage.assign({part(0, "events-0", off)});
    EXPECT_FALSE(st.is_ok());
    return st.message();
  }
  Pairs small_files(Pairs extra = {}) {
    extra.emplace_back("claims.files.max", "1000");  // no merges: one file per fold
    return with_changelog(extra);
  }
};

TEST_F(MissingClaimsFileTest, AFileMissingBetweenTwoOthersIsDamageAndThePartitionIsRestored) {
  const Pairs cfg = small_files();
  int ids = 0;
  const int64_t off = claim_files_and_close(cfg, ids);
  const auto files = claims_files();
  ASSERT_GE(files.size(), 4u);
  fs::remove(files[1]);
  host_.logs.clear();

  auto& again = start(cfg, {part(0, "events-0", off)});
  EXPECT_TRUE(logged(host_, "is missing its claims file " + files[1].string())) << all_logs(host_);
  ASSERT_EQ(set_aside().size(), 1u) << all_logs(host_);
  EXPECT_EQ(metric("dedupe_restored_claims_total"), static_cast<double>(ids));
  int64_t next = off;
  EXPECT_THAT(again.process(range(0, ids, next)).kept, IsEmpty());
}

TEST_F(MissingClaimsFileTest, TheNewestFileMissingWhileOlderOnesRemainIsDamage) {
  const Pairs cfg = small_files({{"on.store.damaged", "fail"}});
  int ids = 0;
  const int64_t off = claim_files_and_close(cfg, ids);
  const auto files = claims_files();
  ASSERT_GE(files.size(), 4u);
  fs::remove(files.back());
  const std::string refused = refused_assign(cfg, off);
  EXPECT_THAT(refused, HasSubstr("is missing its claims file " + files.back().string()));
  EXPECT_THAT(refused, HasSubstr("names it as its newest"));
  EXPECT_TRUE(set_aside().empty());
}

// The same store with every file in place, and after merges, opens as it is.
TEST_F(MissingClaimsFileTest, AWholeStoreOpensAsItIsAlsoAfterMerges) {
  int ids = 0;
  const int64_t off = claim_files_and_close(small_files(), ids);
  host_.logs.clear();
  auto& again = start(with_changelog({{"claims.files.max", "2"}}), {part(0, "events-0", off)});
  int64_t next = off;
  EXPECT_THAT(again.process(range(0, ids, next)).kept, IsEmpty());
  EXPECT_TRUE(stage_->positions({part(0, "events-0", next)}).is_ok());
  commit_round();
  // Folds past claims.files.max start merges, which run beside the rounds.
  int fresh = ids;
  for (int i = 0; i < 30 && claims_files().size() > 3; ++i) {
    EXPECT_EQ(again.process(range(fresh, fresh + 20000, next)).kept.size(), 20000u);
    fresh += 20000;
    EXPECT_TRUE(stage_->positions({part(0, "events-0", next)}).is_ok());
    commit_round();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_LE(claims_files().size(), 3u);
  stage_.reset();
  host_.logs.clear();
  auto& last = start(with_changelog({{"claims.files.max", "2"}}), {part(0, "events-0", next)});
  EXPECT_TRUE(set_aside().empty()) << all_logs(host_);
  EXPECT_EQ(metric("dedupe_stores_set_aside_total"), 0) << all_logs(host_);
  EXPECT_FALSE(logged(host_, "missing its claims file")) << all_logs(host_);
  EXPECT_EQ(metric("dedupe_restored_claims_total"), 0) << all_logs(host_);
  EXPECT_THAT(last.process(range(0, fresh, next)).kept, IsEmpty());
}

namespace {
std::string text_of(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void put_text(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
}  // namespace

// The oldest file, or every file, gone by hand: eviction says how far it removed files
// (claims-evicted) before it removes them, so a file below the oldest, or the newest the
// meta knows of with none left, that eviction did not reach is missing.
TEST_F(MissingClaimsFileTest, TheOldestFileMissingIsDamage) {
  const Pairs cfg = small_files({{"on.store.damaged", "fail"}});
  int ids = 0;
  const int64_t off = claim_files_and_close(cfg, ids);
  const auto files = claims_files();
  ASSERT_GE(files.size(), 4u);
  fs::remove(files.front());
  const std::string refused = refused_assign(cfg, off);
  EXPECT_THAT(refused, HasSubstr("is missing its claims file " + files.front().string()));
  EXPECT_THAT(refused, HasSubstr("no older file is left (eviction removed files up to 0)"));
}

TEST_F(MissingClaimsFileTest, EveryFileMissingIsDamageAndThePartitionIsRestored) {
  const Pairs cfg = small_files();
  int ids = 0;
  const int64_t off = claim_files_and_close(cfg, ids);
  const auto files = claims_files();
  ASSERT_GE(files.size(), 4u);
  for (const auto& f : files) fs::remove(f);
  host_.logs.clear();

  auto& again = start(cfg, {part(0, "events-0", off)});
  EXPECT_TRUE(logged(host_, "is missing its claims file " + files.back().string())) << all_logs(host_);
  EXPECT_TRUE(logged(host_, "no claims file is left")) << all_logs(host_);
  ASSERT_EQ(set_aside().size(), 1u) << all_logs(host_);
  EXPECT_EQ(metric("dedupe_restored_claims_total"), static_cast<double>(ids));
  int64_t next = off;
  EXPECT_THAT(again.process(range(0, ids, next)).kept, IsEmpty());
}

// Files retention evicted are gone by the store's own hand: a store that evicted opens
// as it is; and so does one whose mark is ahead of the floor in its meta (a kill after
// eviction, before a store without a WAL wrote its meta), shown here by a mark that says
// the oldest file was evicted.
TEST_F(MissingClaimsFileTest, FilesEvictionRemovedAreNotMissing) {
  const Pairs cfg = small_files({{"retention.max.keys", "70000"}});
  auto& t = start(cfg);
  int64_t off = 0;
  int ids = 0;
  const fs::path mark = dir_ / "events-0" / "claims-evicted";
  for (int round = 0; round < 40 && (text_of(mark) == "0\n" || claims_files().size() < 2); ++round) {
    EXPECT_EQ(t.process(range(ids, ids + 20000, off)).kept.size(), 20000u);
    ids += 20000;
    EXPECT_TRUE(stage_->positions({part(0, "events-0", off)}).is_ok());
    commit_round();
  }
  ASSERT_NE(text_of(mark), "0\n") << "retention evicted no file";
  const uint64_t evicted = std::stoull(text_of(mark));
  stage_.reset();
  auto files = claims_files();
  ASSERT_GE(files.size(), 2u);
  for (const auto& f : files) EXPECT_GT(std::stoull(f.stem().string().substr(7)), evicted) << f;
  host_.logs.clear();
  start(cfg, {part(0, "events-0", off)});
  EXPECT_FALSE(logged(host_, "missing its claims file")) << all_logs(host_);
  EXPECT_TRUE(set_aside().empty()) << all_logs(host_);
  stage_.reset();

  // The oldest file evicted by the mark's word only.
  put_text(mark, files.front().stem().string().substr(7) + "\n");
  fs::remove(files.front());
  host_.logs.clear();
  auto& again = start(cfg, {part(0, "events-0", off)});
  EXPECT_FALSE(logged(host_, "missing its claims file")) << all_logs(host_);
  EXPECT_TRUE(set_aside().empty()) << all_logs(host_);
  int64_t next = off;
  EXPECT_THAT(again.process(range(ids - 20000, ids, next)).kept, IsEmpty());
}

// A store made before the mark opens as it is and keeps the mark from then on; a mark
// that is not a number is damage.
TEST_F(MissingClaimsFileTest, AStoreWithoutTheMarkTakesItsFilesAsWholeAndABadMarkIsDamage) {
  const Pairs cfg = small_files({{"on.store.damaged", "fail"}});
  int ids = 0;
  const int64_t off = claim_files_and_close(cfg, ids);
  const fs::path mark = dir_ / "events-0" / "claims-evicted";
  ASSERT_EQ(text_of(mark), "0\n");
  fs::remove(mark);
  {
    TransformHarness stage(library(), "dedupe", config(cfg), &host_);
    ASSERT_TRUE(stage.ok());
    auto st = stage.assign({part(0, "events-0", off)});
    ASSERT_TRUE(st.is_ok()) << st.message();
  }
  EXPECT_EQ(text_of(mark), "0\n");
  put_text(mark, "twelve\n");
  EXPECT_THAT(refused_assign(cfg, off), HasSubstr("has an unreadable " + mark.string()));
}
