// The changelog through the real .so: what one stage writes in its rounds, another
// stage with an empty state directory (another host) restores before it processes a
// record. The harness's FakeHost plays the sink that keeps the changelog; the real
// Kafka path is proven by tests/integration/kafka/scale_out_test.cpp.
#include <fstream>
#include <thread>

#include "changelog_codec.hpp"
#include "dedupe_fixture.hpp"

using namespace dedupe_test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

constexpr const char* kTopic = "cl";

class ChangelogTest : public DedupeTest {
 protected:
  void SetUp() override {
    DedupeTest::SetUp();
    host_.enable_state();
  }
  Pairs on(const std::string& state_dir, Pairs extra = {}) {
    extra.emplace_back("changelog", "on");
    extra.emplace_back("changelog.topic", kTopic);
    extra.emplace_back("changelog.catch.up.timeout", "200");
    extra.emplace_back("state.dir", (dir_ / state_dir).string());
    return extra;
  }
  // Reads positions like the host: the round read up to `next` in partition 0.
  void read_up_to(int64_t next) {
    ASSERT_TRUE(stage_->positions({part(0, "events-0", next)}).is_ok());
  }
  std::vector<FakeHost::StateRecord>& log() { return host_.state(kTopic, 0); }
};

TEST_F(ChangelogTest, ClaimsFollowThePartitionToAnEmptyHost) {
  auto& a = start(on("host-a"));
  EXPECT_THAT(a.process({event("a", 0), event("b", 1), event("a", 2), event("c", 3)}).kept,
              ElementsAre(0u, 1u, 3u));
  read_up_to(4);
  commit_round();
  ASSERT_FALSE(log().empty());
  // Nothing local was needed: host B has an empty state directory.
  auto& b = start(on("host-b"), {part(0, "events-0", 4)});
  EXPECT_EQ(metric("dedupe_restored_claims_total"), 3);
  EXPECT_THAT(b.process({event("b", 4), event("d", 5), event("c", 6)}).kept, ElementsAre(1u));
  // A replay of an owner is still an owner on the new host.
  EXPECT_THAT(b.process({event("a", 0)}).kept, ElementsAre(0u));
}

TEST_F(ChangelogTest, AnAbortedRoundNeverReachesTheChangelogNorTheLocalStore) {
  auto& a = start(on("host-a"));
  a.process({event("a", 0)});
  read_up_to(1);
  commit_round();
  a.process({event("x", 1)});
  read_up_to(2);
  ASSERT_TRUE(a.prepare_commit().is_ok());
  host_.abort_state();  // the sink's transaction aborted
  ASSERT_TRUE(a.abort().is_ok());
  // Replayed on another host from the committed position, x is new there; on the
  // same host (its local store) too: the round was never applied locally.
  auto& b = start(on("host-b"), {part(0, "events-0", 1)});
  EXPECT_THAT(b.process({event("x", 1), event("a", 2)}).kept, ElementsAre(0u));
  auto& a2 = start(on("host-a"), {part(0, "events-0", 1)});
  EXPECT_THAT(a2.process({event("x", 1), event("a", 2)}).kept, ElementsAre(0u));
}

TEST_F(ChangelogTest, EvictionWritesTombstonesAndTheRestoreKeepsOnlyTheWindow) {
  auto& a = start(on("host-a", {{"retention.max.keys", "100"}}));
  int64_t off = 0;
  for (int round = 0; round < 10; ++round) {
    std::vector<OwnedRecord> in;
    for (int i = 0; i < 50; ++i, ++off) in.push_back(event("id-" + std::to_string(off), off));
    a.process(in);
    read_up_to(off);
    commit_round();
  }
  size_t tombstones = 0;
  for (const auto& r : log()) tombstones += r.value ? 0 : 1;
  EXPECT_GE(tombstones, 7u);  // 10 chunks of 50, at most 3 of them hold the last 100 ids
  auto& b = start(on("host-b", {{"retention.max.keys", "100"}}), {part(0, "events-0", off)});
  EXPECT_EQ(metric("dedupe_store_keys"), 100);
  // The newest ids are known, the evicted ones are new again.
  EXPECT_THAT(b.process({event("id-499", off), event("id-0", off + 1)}).kept, ElementsAre(1u));
}

// A changelog record that cannot be read (a foreign writer, a damaged topic) stops the
// restore with the store named, instead of restoring part of a chunk or guessing.
TEST_F(ChangelogTest, AnUnreadableChunkInTheChangelogStopsTheRestoreAndSaysWhere) {
  auto& a = start(on("host-a"));
  EXPECT_EQ(a.process({event("a", 0), event("b", 1), event("c", 2)}).kept.size(), 3u);
  read_up_to(3);
  commit_round();
  int chunks = 0;
  for (auto& r : log()) {
    exactly::dedupe::ChangelogKey k;
    if (!exactly::dedupe::parse_changelog_key(r.key, "events-0", k) ||
        k.kind != exactly::dedupe::ChangelogKind::chunk || !r.value)
      continue;
    r.value->resize(r.value->size() - 3);  // the last claim loses its fingerprint
    ++chunks;
  }
  ASSERT_EQ(chunks, 1);
  TransformHarness b(library(), "dedupe", config(on("host-b")), &host_);
  ASSERT_TRUE(b.ok()) << b.create_status().message();
  auto st = b.assign({part(0, "events-0", 3)});
  EXPECT_FALSE(st.is_ok());
  EXPECT_THAT(st.message(), HasSubstr("chunk in the changelog of store"));
  EXPECT_THAT(st.message(), HasSubstr((dir_ / "host-b").string()));
}

TEST_F(ChangelogTest, RecordsDroppedUpstreamAtTheTailAreNotABehindStore) {
  auto& a = start(on("host-a"));
  a.process({event("a", 0), event("b", 1)});
  read_up_to(10);  // offsets 2..9 were read by the source and dropped by a filter
  commit_round();
  auto& b = start(on("host-b"), {part(0, "events-0", 10)});
  EXPECT_THAT(b.process({event("a", 10), event("z", 11)}).kept, ElementsAre(1u));
  // Without a changelog the same holds for the local store on a restart.
  auto& l = start({{"changelog", "off"}, {"state.dir", (dir_ / "local").string()}});
  l.process({event("a", 0)});
  read_up_to(7);
  commit_round();
  start({{"changelog", "off"}, {"state.dir", (dir_ / "local").string()}},
        {part(0, "events-0", 7)});
}

TEST_F(ChangelogTest, AChangelogBehindTheCommittedOffsetIsRefusedWithTheOffsets) {
  auto& a = start(on("host-a"));
  a.process({event("a", 0)});
  read_up_to(1);
  commit_round();
  stage_.reset();
  stage_ = std::make_unique<TransformHarness>(library(), "dedupe", config(on("host-b")), &host_);
  auto st = stage_->assign({part(0, "events-0", 50)});
  EXPECT_EQ(st.code(), EX_ERR_FATAL);
  EXPECT_THAT(st.message(), HasSubstr("covers the input up to offset 1"));
  EXPECT_THAT(st.message(), HasSubstr("resumes at 50"));
  stage_.reset();
  stage_ = std::make_unique<TransformHarness>(
      library(), "dedupe", config(on("host-c", {{"on.store.behind", "ignore"}})), &host_);
  EXPECT_TRUE(stage_->assign({part(0, "events-0", 50)}).is_ok());
  EXPECT_EQ(host_.metric("dedupe_store_behind_total{partition=events-0}"), 1);
}

TEST_F(ChangelogTest, AStoreAheadOfARecreatedChangelogIsRebuiltFromIt) {
  auto& a = start(on("host-a"));
  a.process({event("a", 0), event("b", 1)});
  read_up_to(2);
  commit_round();
  stage_.reset();
  log().clear();  // the topic was deleted and created again (and the group reset)
  host_.logs.clear();
  auto& a2 = start(on("host-a"), {part(0, "events-0", -1)});
  EXPECT_TRUE(logged(host_, "re-created"));
  // The store now holds what the changelog holds: nothing.
  EXPECT_THAT(a2.process({event("a", 0), event("b", 1)}).kept, ElementsAre(0u, 1u));
}

// Re-created while the group kept its offsets (deleted by mistake, say): the store is the
// only copy left of the claims. It was wiped as above, and every id seen before passed
// again (a QA pass, 2026-12-06: 37,972 duplicated). Now the partition is refused, the
// store kept; with on.store.behind: ignore the stage goes on with it.
TEST_F(ChangelogTest, AStoreAheadOfAChangelogRecreatedUnderTheGroupIsKeptNotWiped) {
  auto& a = start(on("host-a"));
  a.process({event("a", 0), event("b", 1)});
  read_up_to(2);
  commit_round();
  stage_.reset();
  log().clear();  // deleted and created again; the group resumes at 2
  stage_ = std::make_unique<TransformHarness>(library(), "dedupe", config(on("host-a")), &host_);
  auto st = stage_->assign({part(0, "events-0", 2)});
  EXPECT_EQ(st.code(), EX_ERR_FATAL);
  EXPECT_THAT(st.message(), HasSubstr("deleted and re-created while the group kept its offsets"));
  EXPECT_THAT(st.message(), HasSubstr("on.store.behind: ignore"));
  stage_.reset();
  auto& a2 = start(on("host-a", {{"on.store.behind", "ignore"}}), {part(0, "events-0", 2)});
  // The claims are still there: a and b are duplicates, c is new.
  EXPECT_THAT(a2.process({event("a", 2), event("b", 3), event("c", 4)}).kept, ElementsAre(2u));
  read_up_to(5);
  commit_round();
  EXPECT_FALSE(log().empty());
  // Following the new changelog now: the next start is an ordinary one.
  stage_.reset();
  stage_ = std::make_unique<TransformHarness>(library(), "dedupe", config(on("host-a")), &host_);
  EXPECT_TRUE(stage_->assign({part(0, "events-0", 5)}).is_ok());
  EXPECT_THAT(stage_->process({event("a", 5), event("c", 6), event("d", 7)}).kept, ElementsAre(2u));
}

// Offsets moved back (rewound_input.cpp): the local store is written only after the
// commit, so its position is committed output, locally and on a host that restores it;
// records below it that find their own claims are duplicates.
TEST_F(ChangelogTest, OffsetsMovedBackAreDuplicatesHereAndOnAnotherHost) {
  auto& a = start(on("host-a"));
  EXPECT_THAT(a.process({event("a", 0), event("b", 1), event("c", 2)}).kept, ElementsAre(0u, 1u, 2u));
  read_up_to(3);
  commit_round();
  auto& a2 = start(on("host-a"), {part(0, "events-0", 1)});
  EXPECT_TRUE(logged(host_, "resumes at offset 1, before offset 3"));
  EXPECT_THAT(a2.process({event("b", 1), event("c", 2), event("d", 3)}).kept, ElementsAre(2u));
  read_up_to(4);
  commit_round();
  // Another host, restoring from the changelog, rewound to the start.
  auto& b = start(on("host-b"), {part(0, "events-0", 0)});
  EXPECT_THAT(b.process({event("a", 0), event("b", 1), event("c", 2), event("d", 3), event("e", 4)}).kept,
              ElementsAre(4u));
}

TEST_F(ChangelogTest, AnAbortedRoundStillReplaysAfterOffsetsMovedBack) {
  auto& a = start(on("host-a"));
  a.process({event("a", 0)});
  read_up_to(1);
  commit_round();
  a.process({event("b", 1)});
  read_up_to(2);
  ASSERT_TRUE(a.prepare_commit().is_ok());
  host_.abort_state();  // the sink's transaction aborted: the changelog never got the round
  auto& a2 = start(on("host-a"), {part(0, "events-0", 1)});
  EXPECT_THAT(a2.process({event("b", 1), event("a", 2)}).kept, ElementsAre(0u));
}

// The default changelog name follows the stage's place in the chain: a transform added
// before dedupe gave it a new, empty changelog, which read as a re-created one, so the
// store was wiped and every id let through again. The store remembers its changelog and
// a stage with another one is refused, naming the one to keep.
TEST_F(ChangelogTest, AStoreKeptWithAnotherChangelogIsRefusedNotWiped) {
  auto& a = start(on("host-a"));
  a.process({event("a", 0), event("b", 1)});
  read_up_to(2);
  commit_round();
  stage_.reset();
  Pairs moved = with(on("host-a"), "changelog.topic", "cl-moved");
  TransformHarness t(library(), "dedupe", config(moved), &host_);
  ASSERT_TRUE(t.ok());
  auto st = t.assign({part(0, "events-0", 2)});
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_EQ(st.key(), "changelog.topic");
  EXPECT_THAT(st.message(), HasSubstr("holds the claims of changelog cl, but this stage's changelog is cl-moved"));
  EXPECT_THAT(st.message(), HasSubstr("Set changelog.topic: cl on this stage to keep its claims"));
  // Starting over takes both steps: the group's offsets are past the new, empty changelog.
  EXPECT_THAT(st.message(), HasSubstr("and set on.store.behind: ignore"));
  // Nothing was wiped: with its own changelog again, both ids are still known.
  auto& again = start(on("host-a"), {part(0, "events-0", 2)});
  EXPECT_TRUE(again.process({event("a", 2), event("b", 3)}).kept.empty());
}

// changelog: auto beside a sink that keeps no changelogs (the file sink) recorded the
// default changelog name anyway, and the pipeline renamed (which renames that default)
// was refused for a changelog it never had, with advice to remove its only copy (QA).
TEST_F(ChangelogTest, AStoreThatNeverHadAChangelogIsNotTiedToAChangelogName) {
  host_.refuse_state_opens();
  Pairs autos = with(on("host-a"), "changelog", "auto");
  auto& a = start(autos);
  EXPECT_THAT(a.process({event("a", 0), event("b", 1)}).kept, ElementsAre(0u, 1u));
  commit_round();
  EXPECT_FALSE(fs::exists(dir_ / "host-a" / "events-0" / "CHANGELOG_TOPIC"));
  auto& renamed = start(with(autos, "changelog.topic", "cl-renamed"), {part(0, "events-0", 2)});
  EXPECT_THAT(renamed.process({event("a", 2), event("c", 3)}).kept, ElementsAre(1u));
}

// A partition waiting for its changelog to catch up (changelog.catch.up.timeout, 30 s by
// default) held a stop that long, and past shutdown.timeout the host exited 3 (QA). A
// stop ends the wait: the partition is left for its next owner, not refused.
TEST_F(ChangelogTest, AStopEndsTheWaitForTheChangelogToCatchUp) {
  auto& a = start(on("host-a"));
  a.process({event("a", 0), event("b", 1)});
  read_up_to(2);
  commit_round();
  stage_.reset();
  // The group's offsets are past the empty changelog cl-empty.
  Pairs empty = with(with(on("host-b"), "changelog.catch.up.timeout", "20000"), "changelog.topic", "cl-empty");
  TransformHarness t(library(), "dedupe", config(empty), &host_);
  ASSERT_TRUE(t.ok()) << t.create_status().message();
  host_.ask_stop();
  auto st = t.assign({part(0, "events-0", 2)});
  EXPECT_EQ(st.code(), EX_ERR_RETRIABLE) << st.message();
  EXPECT_THAT(st.message(), HasSubstr("stopped while partition"));
  EXPECT_THAT(st.message(), HasSubstr("waited for changelog cl-empty to catch up"));
}

TEST_F(ChangelogTest, ARestoredStoreFoldsItsNextFillAtItsStaggeredSize) {
  // Partition 1 folds its first fill at 3/4 of the ~21,845-claim threshold (16,384). A
  // restore folds everything it reads; the fill after it is a first fill again, so
  // partitions restored together on a new host do not fold together from then on.
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"}};
  auto& a = start(on("host-a", small), {part(1, "events-1")});
  int64_t off = 0;
  a.process(range(0, 20000, off, 1));
  ASSERT_TRUE(stage_->positions({part(1, "events-1", off)}).is_ok());
  commit_round();
  auto& b = start(on("host-b", small), {part(1, "events-1", off)});
  const size_t restored = folded_files(dir_ / "host-b" / "events-1");
  EXPECT_GE(restored, 1u);
  b.process(range(20000, 37000, off, 1));  // 17,000 new ids: past 3/4, short of the whole
  ASSERT_TRUE(stage_->positions({part(1, "events-1", off)}).is_ok());
  commit_round();
  EXPECT_EQ(folded_files(dir_ / "host-b" / "events-1"), restored + 1);
  EXPECT_THAT(b.process(range(0, 37000, off, 1)).kept, ::testing::IsEmpty());
}

TEST_F(ChangelogTest, ChangelogOnWithoutASinkThatKeepsOneIsAConfigError) {
  FakeHost plain;  // state calls absent, as with a sink built for ABI 1.0
  TransformHarness t(library(), "dedupe", config(on("host-a")), &plain);
  ASSERT_TRUE(t.ok());
  auto st = t.assign({part(0, "events-0")});
  EXPECT_EQ(st.code(), EX_ERR_CONFIG);
  EXPECT_THAT(st.message(), HasSubstr("changelog: on"));
}

}  // namespace

// A standby (ABI 1.2) tails the owner's changelog; when the owner dies and the partition
// is assigned here, nothing is left to restore and every claimed id is known.
TEST_F(ChangelogTest, AStandbyCopyTakesOverWithNothingLeftToRestore) {
  auto& a = start(on("host-a"));
  int64_t off = 0;
  auto round = [&](int n) {
    std::vector<OwnedRecord> in;
    for (int i = 0; i < n; ++i, ++off) in.push_back(event("id-" + std::to_string(off), off));
    a.process(in);
    read_up_to(off);
    commit_round();
  };
  round(300);
  TransformHarness b(library(), "dedupe", config(on("host-b")), &host_);
  ASSERT_TRUE(b.ok()) << b.create_status().message();
  ASSERT_TRUE(b.standby({part(0, "events-0")}).is_ok());
  EXPECT_EQ(metric("dedupe_standby_lag"), 0);
  EXPECT_EQ(host_.metric("dedupe_standby_partitions"), 1);
  round(200);  // the owner goes on; the next tick catches up
  ASSERT_TRUE(b.standby({part(0, "events-0")}).is_ok());
  EXPECT_EQ(metric("dedupe_standby_lag"), 0);

  ASSERT_TRUE(b.assign({part(0, "events-0", off)}).is_ok());
  EXPECT_EQ(metric("dedupe_restored_claims_total"), 0);
  bool from_standby = false;
  for (const auto& [level, line] : host_.logs)
    from_standby |= line.find("from its standby copy") != std::string::npos;
  EXPECT_TRUE(from_standby);
  EXPECT_THAT(b.process({event("id-0", off), event("id-499", off + 1), event("new", off + 2)}).kept,
              ElementsAre(2u));
}

TEST_F(ChangelogTest, WithoutABudgetThereIsNoStandbyAndTheTakeoverRestoresInFull) {
  auto& a = start(on("host-a"));
  std::vector<OwnedRecord> in;
  for (int i = 0; i < 100; ++i) in.push_back(event("id-" + std::to_string(i), i));
  a.process(in);
  read_up_to(100);
  commit_round();
  TransformHarness b(library(), "dedupe", config(on("host-b", {{"standby.budget", "0"}})), &host_);
  ASSERT_TRUE(b.ok()) << b.create_status().message();
  ASSERT_TRUE(b.standby({part(0, "events-0")}).is_ok());
  ASSERT_TRUE(b.assign({part(0, "events-0", 100)}).is_ok());
  EXPECT_EQ(metric("dedupe_restored_claims_total"), 100);
}

// ABI 1.2: a restore longer than a few rounds runs in its own thread while the host holds
// only that partition back; the stage releases it when the store is ready.
TEST_F(ChangelogTest, ALongRestoreRunsInItsOwnThreadWhileThePartitionIsHeld) {
  host_.enable_hold();
  auto& a = start(on("host-a"));
  int64_t off = 0;
  for (int round = 0; round < 80; ++round) {  // 2 changelog records a round: past the threshold
    std::vector<OwnedRecord> in;
    for (int i = 0; i < 10; ++i, ++off) in.push_back(event("id-" + std::to_string(off), off));
    a.process(in);
    read_up_to(off);
    commit_round();
  }
  stage_.reset();
  EXPECT_TRUE(host_.held().empty());  // A restored nothing: no hold
  TransformHarness b(library(), "dedupe", config(on("host-b")), &host_);
  ASSERT_TRUE(b.ok()) << b.create_status().message();
  ASSERT_TRUE(b.assign({part(0, "events-0", off)}).is_ok());
  EXPECT_THAT(host_.held(), ElementsAre("events-0"));
  ASSERT_TRUE(host_.wait_released("events-0", std::chrono::seconds(30)));
  ASSERT_TRUE(b.standby({}).is_ok());  // the host's tick: the restore is settled
  EXPECT_EQ(metric("dedupe_restored_claims_total"), off);
  EXPECT_THAT(b.process({event("id-0", off), event("id-799", off + 1), event("new", off + 2)}).kept,
              ElementsAre(2u));
}

// With a changelog, no round and no fold adoption waits for the disk: the changelog is
// the durable copy. An fdatasync there held the pipeline thread 20-30 ms per adoption,
// and 190-500 ms while a broker on the same disk flushed (docs/benchmarks.md, "A fold's
// fsync"). Without one, every round's write is synced, and so is each adoption.
TEST_F(ChangelogTest, WithAChangelogNeitherRoundsNorFoldsWaitForTheDisk) {
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"}};
  auto rounds = [&](int64_t& off) {
    for (int r = 0; r < 5; ++r) {
      stage_->process(range(r * 6000, (r + 1) * 6000, off));
      read_up_to(off);
      commit_round();
    }
  };
  auto& a = start(on("host-a", small));
  int64_t off = 0;
  a.process(range(1000000, 1000010, off));
  read_up_to(off);
  commit_round();
  const double at_start = metric("dedupe_store_synced_writes_total");  // the open's own
  rounds(off);  // 30,000 ids: past the ~21,845-claim threshold
  ASSERT_GE(folded_files(dir_ / "host-a" / "events-0"), 1u);
  EXPECT_EQ(metric("dedupe_store_synced_writes_total"), at_start);
  EXPECT_LE(at_start, 1);

  Pairs local = small;
  local.emplace_back("changelog", "off");
  local.emplace_back("state.dir", (dir_ / "host-local").string());
  start(local);
  off = 0;
  rounds(off);
  ASSERT_GE(folded_files(dir_ / "host-local" / "events-0"), 1u);
  // Five rounds and at least one adoption, each synced (the counter is cumulative).
  EXPECT_GE(metric("dedupe_store_synced_writes_total") - at_start, 6);
}

// With a changelog the round's write to the store is not synced, and it is made by the
// store's own writer thread (round_writer.hpp): a write() held up in the file system (at
// the kernel's first writeback of a run's files the WAL's append waited 231-331 ms)
// must not hold up the round. The kernel counts the bytes each thread writes.
TEST_F(ChangelogTest, WithAChangelogTheStoreIsWrittenOffTheCommittingThread) {
  auto written_by_this_thread = [] {
    std::ifstream io("/proc/thread-self/io");
    std::string key;
    uint64_t value = 0;
    while (io >> key >> value)
      if (key == "wchar:") return value;
    return uint64_t{0};
  };
  auto rounds = [&](int64_t& off) {
    const uint64_t before = written_by_this_thread();
    for (int r = 0; r < 5; ++r) {
      stage_->process(range(r * 2000, (r + 1) * 2000, off));
      read_up_to(off);
      commit_round();
    }
    return written_by_this_thread() - before;
  };
  start(on("host-a"));
  int64_t off = 0;
  const uint64_t with_changelog = rounds(off);

  Pairs local = {{"changelog", "off"}, {"state.dir", (dir_ / "host-local").string()}};
  start(local);
  off = 0;
  const uint64_t synced = rounds(off);
  // The control: synced rounds write their chunks (10,000 ids) on this thread.
  ASSERT_GE(synced, 10000u * 8);
  EXPECT_LT(with_changelog, synced / 10);

  // And the store opened again knows every id (its writes were drained at close): the
  // same ids at new offsets are all duplicates.
  start(on("host-a"), {part(0, "events-0", 10000)});
  off = 10000;
  EXPECT_TRUE(stage_->process(range(0, 10000, off)).kept.empty());
}

// With a changelog the store writes no WAL: what its memtable held since the last flush
// (rounds, a fold's adoption) is gone after a kill, and the next open restores it from
// the changelog. The kill is an image of the store's directory taken while the stage
// runs: what a process killed at that moment leaves on disk (its page cache survives it);
// the fold's claims file stays, its adoption is gone. Opened on another host, the copy is
// brought to the changelog's end before it answers, and knows every id.
TEST_F(ChangelogTest, AKilledStoreWritesNoWalAndTheChangelogBringsBackWhatItsMemtableHeld) {
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"}};
  auto& a = start(on("host-a", small));
  const fs::path store = dir_ / "host-a" / "events-0";
  int64_t off = 0;
  for (int r = 0; r < 4; ++r) {  // past the ~21,845-claim threshold: a fold and its adoption
    a.process(range(r * 6000, (r + 1) * 6000, off));
    read_up_to(off);
    commit_round();
  }
  ASSERT_GE(folded_files(store), 1u);
  uintmax_t wal_bytes = 0;
  for (auto& e : fs::directory_iterator(store))
    if (e.path().extension() == ".log") wal_bytes += fs::file_size(e.path());
  EXPECT_EQ(wal_bytes, 0u) << "the store wrote a WAL beside its changelog";

  fs::create_directories(dir_ / "image");
  copy_live_store(store, dir_ / "image" / "events-0");

  auto& b = start(on("image", small), {part(0, "events-0", off)});
  // The rounds the memtable held came back from the changelog.
  EXPECT_GE(metric("dedupe_restored_claims_total"), 6000);
  int64_t off2 = off;
  EXPECT_TRUE(b.process(range(0, 24000, off2)).kept.empty());
  EXPECT_THAT(b.process({event("id-new", off2)}).kept, ElementsAre(0u));
}

namespace {
std::vector<fs::path> claims_files(const fs::path& store) {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(store))
    if (e.path().extension() == ".xc") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The kill both tests below make: the RocksDB files of a clean close after 5,000 ids
// (one fill folded: file A), and the claims files of the store as it runs later.
class KilledBehindItsFilesTest : public ChangelogTest {
 protected:
  const Pairs small_ = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"},
                        {"claims.files.max", "2"}};
  fs::path store() const { return dir_ / "host-a" / "events-0"; }  // dir_ is set in SetUp
  fs::path image() const { return dir_ / "image" / "events-0"; }
  int64_t off_ = 0;

  // Returns the stage that goes on from the clean close; `first_file` is A.
  TransformHarness& closed_after_a_first_fill(fs::path* first_file = nullptr) {
    start(on("host-a", small_)).process(range(0, 5000, off_));
    read_up_to(off_);
    commit_round();
    stage_.reset();  // a clean close folds the fill (file A) and flushes
    const auto first = claims_files(store());
    EXPECT_EQ(first.size(), 1u);
    if (first_file != nullptr && !first.empty()) *first_file = first[0];
    copy_live_store(dir_ / "host-a", dir_ / "image");
    return start(on("host-a", small_), {part(0, "events-0", off_)});
  }
  // The image's claims files become the running store's.
  void killed_now() {
    for (const auto& f : claims_files(image())) fs::remove(f);
    for (const auto& f : claims_files(store())) fs::copy_file(f, image() / f.filename());
  }
};
}  // namespace

// A kill leaves the claims files as they were at that moment, and the store's RocksDB
// files as of its last flush, which without a WAL can be folds and merges behind them.
// The image: the RocksDB files of a clean close (one fill folded: file A), the claims
// files of later, when two more fills had folded (B, C) and A and B had been merged into
// one file under B's name (A removed). The next open restores from the close's position.
// The claims below the highest label found are in those files and are not folded again:
// folded again, the restore's first fold came to B's name and replaced the merged file,
// and A's ids were lost on disk and passed again (seen in
// `ScaleOut.DedupeExactlyOnceAcrossHostsKillsJoinsAndLeaves` with EXACTLY_HEAVY=1).
TEST_F(KilledBehindItsFilesTest, ARestoreBehindAMergedFileKeepsTheClaimsItHolds) {
  fs::path first;
  auto& a = closed_after_a_first_fill(&first);
  // Fills of 24,000 ids (4 rounds; the threshold is ~21,845): B, then C, then A and B
  // merge (the pair with the fewest claims) under B's name.
  int id = 5000;
  for (int r = 0; r < 8; ++r, id += 6000) {
    a.process(range(id, id + 6000, off_));
    read_up_to(off_);
    commit_round();
  }
  // Rounds of repeats (no claims: the changelog's end stays at C) until the merge is in.
  for (int i = 0; i < 200 && fs::exists(first); ++i) {
    int64_t o = off_;
    ASSERT_TRUE(a.process(range(5000, 5010, o)).kept.empty());
    off_ = o;
    read_up_to(off_);
    commit_round();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(fs::exists(first)) << "A was never merged";
  ASSERT_EQ(claims_files(store()).size(), 2u);  // A+B under B's name, and C
  killed_now();

  auto& b = start(on("image", small_), {part(0, "events-0", off_)});
  EXPECT_GE(metric("dedupe_restored_claims_total"), 48000);
  int64_t off2 = off_;
  EXPECT_TRUE(b.process(range(0, 5000, off2)).kept.empty()) << "the ids of A passed again";
  EXPECT_TRUE(b.process(range(5000, id, off2)).kept.empty());
  EXPECT_THAT(b.process({event("id-new", off2)}).kept, ElementsAre(0u));
  // And again after a clean close: what is on disk holds them.
  ++off2;
  read_up_to(off2);
  commit_round();
  auto& c = start(on("image", small_), {part(0, "events-0", off2)});
  int64_t off3 = off2;
  EXPECT_TRUE(c.process(range(0, id, off3)).kept.empty());
}

// The same kill after twelve fills, merged as they came. Folded again, the restore
// made one file after another under the names found, beside merges of those files (a
// merge writes under its newest input's name and removes the other inputs by name): files
// it had just made were removed, or two threads wrote one (a store refused as damaged at
// its next open, in `KafkaCrash.DedupeEmitsEveryIdExactlyOnceAcrossSigkill` with
// EXACTLY_HEAVY=1). Checked after the restore, and after rounds (each may adopt a
// merge), a clean close and another open.
TEST_F(KilledBehindItsFilesTest, ARestoreOverManyMergedFilesFoldsNoneOfTheirClaimsAgain) {
  auto& a = closed_after_a_first_fill();
  int id = 5000;
  for (int r = 0; r < 48; ++r, id += 6000) {  // 12 fills, merged as they come
    a.process(range(id, id + 6000, off_));
    read_up_to(off_);
    commit_round();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  killed_now();

  // Restored, then rounds (each may adopt a merge), then a clean close and an open.
  for (int pass = 0; pass < 2; ++pass) {
    auto& b = start(on("image", small_), {part(0, "events-0", off_)});
    int64_t o = off_;
    auto k = b.process(range(0, id, o)).kept;
    std::string files;
    for (const auto& f : claims_files(image())) files += " " + f.filename().string();
    EXPECT_TRUE(k.empty()) << "pass " << pass << ": " << k.size() << " ids passed again, the first id-"
                           << (k.empty() ? 0 : k.front()) << ", the last id-" << (k.empty() ? 0 : k.back())
                           << "; files:" << files;
    for (int i = 0; i < 10; ++i) {
      b.process({event("pass-" + std::to_string(pass) + "-" + std::to_string(i), o++)});
      read_up_to(o);
      commit_round();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    off_ = o;
  }
}

// A restore writes little to the memtable (each chunk's time; the claims go to files),
// so without a WAL nothing might flush it for long: it flushes when it ends. A kill
// right after it then does not restore it all again (in the KafkaCrash runs every start
// restored from position 0).
TEST_F(ChangelogTest, AKillRightAfterARestoreDoesNotRestoreItAgain) {
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}};
  auto& a = start(on("host-a", small));
  int64_t off = 0;
  for (int r = 0; r < 4; ++r) {
    a.process(range(r * 6000, (r + 1) * 6000, off));
    read_up_to(off);
    commit_round();
  }
  start(on("host-b", small), {part(0, "events-0", off)});
  const double restored = metric("dedupe_restored_claims_total");
  ASSERT_GE(restored, 24000);
  copy_live_store(dir_ / "host-b", dir_ / "image");  // the kill
  auto& c = start(on("image", small), {part(0, "events-0", off)});
  EXPECT_EQ(metric("dedupe_restored_claims_total"), restored) << "restored again";
  int64_t off2 = off;
  EXPECT_TRUE(c.process(range(0, 24000, off2)).kept.empty());
}

// Without a changelog the WAL is the store's log: the same kill loses nothing. `changelog:
// auto` finds out only at the restore that the sink keeps none: the store, opened to
// write without a WAL, takes it back before its first round.
class NoChangelogKillTest : public DedupeTest, public ::testing::WithParamInterface<const char*> {};
INSTANTIATE_TEST_SUITE_P(Modes, NoChangelogKillTest, ::testing::Values("off", "auto"));

TEST_P(NoChangelogKillTest, AKilledStoreKeepsEveryRoundInItsWal) {
  if (std::string(GetParam()) == "auto") host_.refuse_state_opens();
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"},
                 {"changelog", GetParam()}, {"state.dir", (dir_ / "host-a").string()}};
  auto& a = start(small);
  int64_t off = 0;
  for (int r = 0; r < 4; ++r) {
    a.process(range(r * 6000, (r + 1) * 6000, off));
    ASSERT_TRUE(stage_->positions({part(0, "events-0", off)}).is_ok());
    commit_round();
  }
  fs::create_directories(dir_ / "image");
  copy_live_store(dir_ / "host-a" / "events-0", dir_ / "image" / "events-0");
  small.back().second = (dir_ / "image").string();
  auto& b = start(small, {part(0, "events-0", off)});
  EXPECT_EQ(metric("dedupe_restored_claims_total"), 0);
  int64_t off2 = off;
  EXPECT_TRUE(b.process(range(0, 24000, off2)).kept.empty());
  EXPECT_THAT(b.process({event("id-new", off2)}).kept, ElementsAre(0u));
}

// The same with an assignment of several partitions, whose stores are opened side by side
// before the first restore finds that the sink keeps no changelog: every one of them takes
// its WAL back, not only the first.
TEST_P(NoChangelogKillTest, EveryStoreOfAnAssignmentKeepsItsRoundsInItsWal) {
  if (std::string(GetParam()) == "auto") host_.refuse_state_opens();
  Pairs small = {{"rocksdb.write.buffer.size", "1048576"}, {"rocksdb.fold.background", "false"},
                 {"changelog", GetParam()}, {"state.dir", (dir_ / "host-a").string()}};
  std::vector<Partition> three;
  for (int32_t i = 0; i < 3; ++i) three.push_back(part(i, "events-" + std::to_string(i)));
  auto& a = start(small, three);
  std::vector<int64_t> off(3, 0);
  for (int r = 0; r < 2; ++r) {
    std::vector<Partition> read;
    for (int32_t i = 0; i < 3; ++i) {
      a.process(range(r * 3000, (r + 1) * 3000, off[i], i));
      read.push_back(part(i, "events-" + std::to_string(i), off[i]));
    }
    ASSERT_TRUE(stage_->positions(read).is_ok());
    commit_round();
  }
  fs::create_directories(dir_ / "image");
  for (int32_t i = 0; i < 3; ++i) {
    const std::string name = "events-" + std::to_string(i);
    copy_live_store(dir_ / "host-a" / name, dir_ / "image" / name);
    three[i].start_offset = off[i];
  }
  small.back().second = (dir_ / "image").string();
  auto& b = start(small, three);
  for (int32_t i = 0; i < 3; ++i) {
    int64_t o = off[i];
    EXPECT_TRUE(b.process(range(0, 6000, o, i)).kept.empty()) << "partition " << i;
  }
}

namespace {

// Claims made while the changelog was off never reach it. Turned on again, the store
// says so once (a restore elsewhere would let those ids pass again); nothing said it
// before (QA: 59,983 duplicated after the store was moved away).
TEST_F(ChangelogTest, ClaimsMadeWhileTheChangelogWasOffAreNamedWhenItIsOnAgain) {
  auto& a = start(on("host-a"));
  EXPECT_THAT(a.process({event("a", 0), event("b", 1)}).kept, ElementsAre(0u, 1u));
  read_up_to(2);
  commit_round();
  Pairs off = with(on("host-a"), "changelog", "off");
  auto& unlogged = start(off, {part(0, "events-0", 2)});
  EXPECT_THAT(unlogged.process({event("c", 2), event("d", 3), event("a", 4)}).kept, ElementsAre(0u, 1u));
  read_up_to(5);
  commit_round();
  EXPECT_FALSE(logged(host_, "made while its changelog was off"));
  host_.logs.clear();
  auto& again = start(on("host-a"), {part(0, "events-0", 5)});
  EXPECT_TRUE(logged(host_, "made while its changelog was off (sequence numbers 2..3)")) << all_logs(host_);
  // The store itself still has every claim.
  EXPECT_THAT(again.process({event("c", 5), event("e", 6)}).kept, ElementsAre(1u));
  read_up_to(7);
  commit_round();
  // Said once: the next start with the changelog on is quiet.
  host_.logs.clear();
  start(on("host-a"), {part(0, "events-0", 7)});
  EXPECT_FALSE(logged(host_, "made while its changelog was off"));
  // What the warning is about: a host that restores from the changelog alone lacks c, d.
  auto& b = start(on("host-b"), {part(0, "events-0", 7)});
  EXPECT_THAT(b.process({event("a", 7), event("c", 8), event("e", 9)}).kept, ElementsAre(1u));
}

// A store kept without any changelog, which the changelog is then turned on for, is kept
// (the changelog is empty) and said to hold claims the changelog lacks.
TEST_F(ChangelogTest, AStoreThatNeverHadAChangelogIsNamedWhenOneIsTurnedOn) {
  Pairs off = with(on("host-a"), "changelog", "off");
  auto& local = start(off);
  EXPECT_THAT(local.process({event("a", 0), event("b", 1)}).kept, ElementsAre(0u, 1u));
  read_up_to(2);
  commit_round();
  host_.logs.clear();
  auto& again = start(on("host-a"), {part(0, "events-0", 2)});
  EXPECT_TRUE(logged(host_, "made while its changelog was off (sequence numbers 0..1)")) << all_logs(host_);
  EXPECT_THAT(again.process({event("a", 2), event("c", 3)}).kept, ElementsAre(1u));
}

}  // namespace
