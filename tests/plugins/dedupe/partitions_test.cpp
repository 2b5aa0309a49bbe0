// Stores per partition: assign/revoke, isolation, and stores behind the committed
// position.
#include <sys/stat.h>

#include <fstream>

#include "dedupe_fixture.hpp"

namespace dedupe_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST_F(DedupeTest, EachPartitionHasItsOwnStore) {
  auto& t = start({}, {part(0, "events-0"), part(1, "events/1")});
  auto out = t.process({event("a", 0, 0), event("a", 0, 1), event("a", 1, 1), event("b", 1, 0)});
  EXPECT_THAT(out.kept, ElementsAre(0u, 1u, 3u));
  commit_round();
  EXPECT_EQ(metric("dedupe_duplicates_total", "events/1"), 1);
  EXPECT_EQ(metric("dedupe_duplicates_total", "events-0"), 0);
  EXPECT_EQ(metric("dedupe_store_keys", "events-0"), 2);
  EXPECT_EQ(metric("dedupe_store_keys", "events/1"), 1);
  EXPECT_TRUE(fs::is_directory(dir_ / "events-0"));
  // Unsafe characters are replaced, with a hash of the name so names never collide.
  int dirs = 0;
  for (auto& e : fs::directory_iterator(dir_)) {
    if (!e.is_directory()) continue;  // the state directory's lock file
    ++dirs;
    EXPECT_EQ(e.path().filename().string().find('/'), std::string::npos);
  }
  EXPECT_EQ(dirs, 2);
}

// One store per partition: RocksDB's 4 MiB reservation for each MANIFEST was most of a
// small store's disk (QA: 5.9 MB for 1.7 MB of claims; 4 GB for 1,000 partitions).
TEST_F(DedupeTest, AStoreReservesLittleDiskForItsManifest) {
  auto& t = start({}, {part(0, "events-0")});
  EXPECT_THAT(t.process({event("a", 0, 0)}).kept, ElementsAre(0u));
  commit_round();
  int manifests = 0;
  for (auto& e : fs::directory_iterator(dir_ / "events-0")) {
    if (e.path().filename().string().rfind("MANIFEST-", 0) != 0) continue;
    struct stat st {};
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
    EXPECT_LE(st.st_blocks * 512, 512 * 1024) << e.path() << " reserves " << st.st_blocks * 512 << " bytes";
    ++manifests;
  }
  EXPECT_EQ(manifests, 1);
}

// The state directory deleted under a running stage (rm -rf): the lock went with it and a
// second process could take the path, while the stage went on in deleted files in silence
// (QA). The next round fails, naming the directory, before anything of it is made durable.
TEST_F(DedupeTest, AStateDirectoryDeletedWhileRunningFailsTheNextRound) {
  auto& t = start({}, {part(0, "events-0")});
  EXPECT_THAT(t.process({event("a", 0, 0)}).kept, ElementsAre(0u));
  commit_round();
  fs::remove_all(dir_);
  EXPECT_THAT(t.process({event("b", 1, 0)}).kept, ElementsAre(0u));
  auto st = stage_->prepare_commit();
  ASSERT_FALSE(st.is_ok());
  EXPECT_THAT(st.message(), HasSubstr("state directory " + dir_.string() + " was deleted or replaced while it was in use"));
  (void)stage_->abort();
  fs::create_directories(dir_);
}

TEST_F(DedupeTest, RecordsOfUnassignedPartitionsAreFatal) {
  auto& t = start();
  exactly::sdk::Status st;
  auto out = t.process({event("a", 0, 0), event("b", 0, 7)}, &st);
  EXPECT_EQ(st.code(), EX_ERR_FATAL);
  EXPECT_THAT(st.message(), HasSubstr("partition id 7"));
  EXPECT_THAT(out.kept, IsEmpty());
}

// A pipeline with `threads:` runs one instance of the stage per task: they share the
// state directory (each owns the stores of its own partitions) and its lock.
TEST_F(DedupeTest, InstancesOfOneStageShareTheStateDirectory) {
  auto& t = start();
  t.process({event("a", 0)});
  commit_round();
  FakeHost same_stage;  // same pipeline, same stage id: another task of it
  TransformHarness twin(library(), "dedupe", config(), &same_stage);
  ASSERT_TRUE(twin.ok()) << twin.create_status().message();
  ASSERT_TRUE(twin.assign({part(1, "events-1")}).is_ok());
  exactly::sdk::Status st;
  auto out = twin.process({event("a", 0, 1)}, &st);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(out.kept.size(), 1u);  // another partition's store: its own claims
}

TEST_F(DedupeTest, RevokeClosesTheStoreAndAssignReopensIt) {
  auto& t = start();
  t.process({event("a", 0)});
  commit_round();
  // While this stage lives, another one (another process, or another pipeline) cannot
  // use the same state directory, and says who holds it.
  FakeHost other_host("another-pipeline");
  TransformHarness other(library(), "dedupe", config(), &other_host);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.create_status().code(), EX_ERR_CONFIG);
  EXPECT_EQ(other.create_status().key(), "state.dir");
  EXPECT_THAT(other.create_status().message(), HasSubstr("is in use by"));
  EXPECT_THAT(other.create_status().message(), HasSubstr("pid"));
  ASSERT_TRUE(t.revoke({part(0, "events-0")}).is_ok());
  exactly::sdk::Status st;
  t.process({event("b", 1)}, &st);
  EXPECT_EQ(st.code(), EX_ERR_FATAL);  // no longer ours
  // Assigned again, the store is reopened with its claims.
  auto st2 = t.assign({part(0, "events-0", 1)});
  ASSERT_TRUE(st2.is_ok()) << st2.message();
  EXPECT_THAT(t.process({event("a", 1), event("b", 2)}).kept, ElementsAre(1u));
}

TEST_F(DedupeTest, ANewStoreBehindTheCommittedPositionFails) {
  stage_.reset();  // the store directory is locked while a stage lives
  stage_ = std::make_unique<TransformHarness>(library(), "dedupe", config(), &host_);
  auto st = stage_->assign({part(0, "events-0", 500)});
  EXPECT_EQ(st.code(), EX_ERR_FATAL);
  EXPECT_THAT(st.message(), HasSubstr("events-0"));
  EXPECT_THAT(st.message(), HasSubstr("empty"));
  EXPECT_THAT(st.message(), HasSubstr("500"));
  EXPECT_THAT(st.message(), HasSubstr("on.store.behind"));
  // From the beginning, or at an unknown position, a new store is fine.
  EXPECT_TRUE(stage_->assign({part(0, "events-0", 0)}).is_ok());
  EXPECT_TRUE(stage_->assign({part(1, "events-1", -1)}).is_ok());
}

TEST_F(DedupeTest, ADeletedStoreFailsByDefault) {
  auto& t = start();
  t.process({event("a", 0), event("b", 1)});
  commit_round();
  stage_.reset();
  fs::remove_all(dir_ / "events-0");
  stage_.reset();  // the store directory is locked while a stage lives
  stage_ = std::make_unique<TransformHarness>(library(), "dedupe", config(), &host_);
  auto st = stage_->assign({part(0, "events-0", 2)});
  EXPECT_EQ(st.code(), EX_ERR_FATAL);
  EXPECT_THAT(st.message(), HasSubstr("behind"));
}

TEST_F(DedupeTest, AStoreRestoredFromAnOlderCopyFailsByDefaultAndIgnoreGoesOn) {
  auto& t = start();
  t.process({event("a", 0), event("b", 1)});
  commit_round();
  stage_.reset();
  copy_live_store(dir_ / "events-0", dir_ / "old-copy");
  auto& t2 = start({}, {part(0, "events-0", 2)});
  t2.process({event("c", 2), event("d", 3)});
  commit_round();
  stage_.reset();
  fs::remove_all(dir_ / "events-0");
  fs::rename(dir_ / "old-copy", dir_ / "events-0");

  stage_.reset();  // the store directory is locked while a stage lives

  stage_ = std::make_unique<TransformHarness>(library(), "dedupe", config(), &host_);
  auto st = stage_->assign({part(0, "events-0", 4)});
  EXPECT_EQ(st.code(), EX_ERR_FATAL);
  EXPECT_THAT(st.message(), HasSubstr("offset 1"));  // what the store holds
  EXPECT_THAT(st.message(), HasSubstr("offset 4"));  // where the source resumes
  EXPECT_THAT(st.message(), HasSubstr("restore"));

  host_.logs.clear();
  stage_.reset();  // the store directory is locked while a stage lives
  stage_ = std::make_unique<TransformHarness>(library(), "dedupe",
                                              config({{"on.store.behind", "ignore"}}), &host_);
  st = stage_->assign({part(0, "events-0", 4)});
  ASSERT_TRUE(st.is_ok()) << st.message();
  bool warned = false;
  for (auto& [level, msg] : host_.logs)
    warned |= level == EX_LOG_WARN && msg.find("behind") != std::string::npos;
  EXPECT_TRUE(warned);
  // The copy still knows a and b; c and d are lost (they pass again).
  EXPECT_THAT(stage_->process({event("a", 4), event("c", 5)}).kept, ElementsAre(1u));
}

TEST_F(DedupeTest, ToleranceAllowsAGapUpToIt) {
  auto& t = start({{"store.behind.tolerance", "2"}});
  t.process({event("a", 0)});
  commit_round();
  stage_.reset();
  auto fresh = [&](int64_t start_offset) {
    stage_.reset();  // the store directory is locked while a stage lives
    stage_ = std::make_unique<TransformHarness>(
        library(), "dedupe", config({{"store.behind.tolerance", "2"}}), &host_);
    return stage_->assign({part(0, "events-0", start_offset)});
  };
  EXPECT_TRUE(fresh(3).is_ok());
  EXPECT_EQ(fresh(4).code(), EX_ERR_FATAL);
}

// The stores of an assignment are opened side by side (open_stores_side_by_side): each
// still gets its own claims, and the stage says how many it opened so.
TEST_F(DedupeTest, AnAssignmentsStoresOpenSideBySideEachWithItsOwnClaims) {
  std::vector<Partition> six;
  for (int32_t i = 0; i < 6; ++i) six.push_back(part(i, "events-" + std::to_string(i)));
  auto& t = start({}, six);
  std::vector<OwnedRecord> first;
  for (int32_t i = 0; i < 6; ++i) first.push_back(event("id-" + std::to_string(i), 0, i));
  EXPECT_EQ(t.process(first).kept.size(), 6u);
  commit_round();
  ASSERT_TRUE(t.revoke(six).is_ok());
  host_.logs.clear();
  for (auto& p : six) p.start_offset = 1;
  ASSERT_TRUE(t.assign(six).is_ok());
  bool said = false;
  for (auto& [level, msg] : host_.logs) said |= msg.find("opened 6 stores side by side") != std::string::npos;
  EXPECT_TRUE(said);
  // Each store kept its own id only: every partition's id-N is a duplicate in partition N
  // and new in the next one.
  std::vector<OwnedRecord> again;
  for (int32_t i = 0; i < 6; ++i) {
    again.push_back(event("id-" + std::to_string(i), 1, i));
    again.push_back(event("id-" + std::to_string((i + 1) % 6), 2, i));
  }
  EXPECT_THAT(t.process(again).kept, ElementsAre(1u, 3u, 5u, 7u, 9u, 11u));
}

// A store that cannot be opened among others is the one named, and the ones opened beside
// it are closed again: the next assignment opens them all.
TEST_F(DedupeTest, AStoreThatCannotOpenAmongOthersIsNamedAndTheOthersAreClosed) {
  auto& t = start({}, {});
  { std::ofstream blocker(dir_ / "events-2"); blocker << "not a directory"; }
  std::vector<Partition> four;
  for (int32_t i = 0; i < 4; ++i) four.push_back(part(i, "events-" + std::to_string(i)));
  auto st = t.assign(four);
  EXPECT_EQ(st.code(), EX_ERR_FATAL);
  EXPECT_THAT(st.message(), HasSubstr((dir_ / "events-2").string()));
  fs::remove(dir_ / "events-2");
  st = t.assign(four);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(t.process({event("a", 0, 0), event("a", 0, 3)}).kept.size(), 2u);
}


// A store opened and killed before its first write leaves a zero-length write-ahead log
// each time (RocksDB deletes old logs only at a flush): a crash loop piled them up. The
// next open removes them; the store's claims and any log with records stay.
TEST_F(DedupeTest, EmptyWriteAheadLogsOfEarlierStartsAreRemovedAtOpen) {
  auto& t = start();
  EXPECT_THAT(t.process({event("a", 0), event("b", 1)}).kept, ElementsAre(0u, 1u));
  commit_round();
  stage_.reset();
  const fs::path store = dir_ / "events-0";
  // Starts that end before a write, as a kill during assignment leaves them.
  for (int n = 0; n < 3; ++n) {
    start({}, {part(0, "events-0", 2)});
    stage_.reset();
  }
  std::ofstream(store / "notes.log") << "";  // not RocksDB's: left alone
  auto& again = start({}, {part(0, "events-0", 2)});
  size_t empty = 0;
  for (auto& e : fs::directory_iterator(store)) {
    empty += e.path().filename() != "notes.log" && e.path().extension() == ".log" &&
             fs::file_size(e.path()) == 0;
  }
  EXPECT_TRUE(fs::exists(store / "notes.log"));
  EXPECT_LE(empty, 1u);  // this open's own (4 without the removal)
  // The claims are all there.
  EXPECT_THAT(again.process({event("a", 2), event("b", 3), event("c", 4)}).kept, ElementsAre(2u));
}

}  // namespace
}  // namespace dedupe_test
