// Input the source's committed offsets were moved back over (an operator's
// kafka-consumer-groups --reset-offsets). With a changelog, records whose round was
// committed are duplicates when they come again, even though each finds its own claim;
// records of a round that may not have committed still come out again (no loss after a
// crash). Without one the stage cannot tell a rewind from a sink's unfinished work, and
// replays come out.
#include "dedupe_fixture.hpp"

using namespace dedupe_test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

bool logged(const FakeHost& h, const std::string& what) {
  for (const auto& [level, text] : h.logs)
    if (text.find(what) != std::string::npos) return true;
  return false;
}

// Without a changelog the store's position is where the source had read to, not what the
// sink committed: an http sink's window keeps records in flight across rounds and commits
// the source only up to the lowest of them. A start below the store's position may be
// that unfinished work, so those records come out again (an offset reset too).
TEST_F(DedupeTest, WithoutAChangelogRecordsPastTheSinksCommittedPositionComeOutAgain) {
  auto& t = start();
  EXPECT_THAT(t.process({event("a", 0), event("b", 1), event("c", 2), event("d", 3)}).kept,
              ElementsAre(0u, 1u, 2u, 3u));
  commit_round();
  // The sink committed the source up to 1 only (b, c, d still in flight), then the host died.
  auto& t2 = start({}, {part(0, "events-0", 1)});
  EXPECT_FALSE(logged(host_, "were moved back"));
  EXPECT_THAT(t2.process({event("b", 1), event("c", 2), event("d", 3), event("e", 4)}).kept,
              ElementsAre(0u, 1u, 2u, 3u));
  EXPECT_EQ(metric("dedupe_replays_total"), 3);
}

TEST_F(DedupeTest, ARoundWrittenButNotCommittedComesOutAgain) {
  auto& t = start();
  t.process({event("a", 0), event("b", 1)});
  commit_round();
  t.process({event("c", 2), event("d", 3)});
  // The store has the round; the sink's commit never happened (the host died).
  ASSERT_TRUE(t.prepare_commit().is_ok());
  auto& t2 = start({}, {part(0, "events-0", 2)});
  EXPECT_THAT(t2.process({event("c", 2), event("d", 3), event("a", 4)}).kept, ElementsAre(0u, 1u));
}

TEST_F(DedupeTest, NoCommittedPositionAtAllReadsTheInputAgainAsTheFirstTime) {
  // A sink whose positions were deleted to start its output over (or a new group): the
  // source starts without a committed offset and the first copies come out again.
  auto& t = start();
  t.process({event("a", 0), event("b", 1), event("a", 2)});
  commit_round();
  auto& t2 = start({}, {part(0, "events-0", -1)});
  EXPECT_THAT(t2.process({event("a", 0), event("b", 1), event("a", 2)}).kept, ElementsAre(0u, 1u));
  EXPECT_FALSE(logged(host_, "were moved back"));
}

class RewindChangelogTest : public DedupeTest {
 protected:
  void SetUp() override {
    DedupeTest::SetUp();
    host_.enable_state();
  }
  Pairs on(const std::string& state_dir) {
    return {{"changelog", "on"}, {"changelog.topic", "cl"}, {"changelog.catch.up.timeout", "200"},
            {"state.dir", (dir_ / state_dir).string()}};
  }
  void read_up_to(int64_t next) { ASSERT_TRUE(stage_->positions({part(0, "events-0", next)}).is_ok()); }
};

// With a changelog the local store is written only after the commit: its position is
// committed output, locally and on a host that restores it.
TEST_F(RewindChangelogTest, OffsetsMovedBackAreDuplicatesHereAndOnAnotherHost) {
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

TEST_F(RewindChangelogTest, AnAbortedRoundStillReplaysAfterTheRewindCheck) {
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

}  // namespace
