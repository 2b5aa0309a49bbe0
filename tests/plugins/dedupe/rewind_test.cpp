// Input the source's committed offsets were moved back over (an operator's
// kafka-consumer-groups --reset-offsets): records whose round was committed are
// duplicates when they come again, even though each finds its own claim; records of a
// round that may not have committed still come out again (no loss after a crash).
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

// Without a changelog: the store is written in prepare_commit, before the round commits.
TEST_F(DedupeTest, OffsetsMovedBackBelowCommittedOutputAreDuplicates) {
  auto& t = start();
  EXPECT_THAT(t.process({event("a", 0), event("b", 1), event("c", 2)}).kept, ElementsAre(0u, 1u, 2u));
  commit_round();
  EXPECT_THAT(t.process({event("d", 3)}).kept, ElementsAre(0u));
  commit_round();
  // The group's offsets reset to the earliest while the host was stopped.
  auto& t2 = start({}, {part(0, "events-0", 0)});
  EXPECT_TRUE(logged(host_, "resumes at offset 0, before offset 4 up to which its output was committed"));
  auto out = t2.process({event("a", 0), event("b", 1), event("c", 2), event("d", 3), event("e", 4)});
  EXPECT_THAT(out.kept, ElementsAre(4u));
  EXPECT_EQ(metric("dedupe_duplicates_total"), 4);
  EXPECT_EQ(metric("dedupe_replays_total"), 0);
}

TEST_F(DedupeTest, ARoundWrittenButNotCommittedStillComesOutAgainAfterARewind) {
  auto& t = start();
  t.process({event("a", 0), event("b", 1)});
  commit_round();
  t.process({event("c", 2), event("d", 3)});
  // The store has the round; the sink's commit never happened (the host died).
  ASSERT_TRUE(t.prepare_commit().is_ok());
  // Restarted at the committed offset: c and d replay their own claims and come out.
  auto& t2 = start({}, {part(0, "events-0", 2)});
  EXPECT_FALSE(logged(host_, "were moved back"));
  EXPECT_THAT(t2.process({event("c", 2), event("d", 3), event("a", 4)}).kept, ElementsAre(0u, 1u));
  commit_round();
  // Moved back further by an operator afterwards: a and b were committed, c and d too now.
  auto& t3 = start({}, {part(0, "events-0", 0)});
  EXPECT_THAT(t3.process({event("a", 0), event("b", 1), event("c", 2), event("d", 3), event("f", 5)}).kept,
              ElementsAre(4u));
}

TEST_F(DedupeTest, ARewindOverAnUncommittedRoundDropsOnlyTheCommittedPart) {
  auto& t = start();
  t.process({event("a", 0), event("b", 1)});
  commit_round();
  t.process({event("c", 2)});
  ASSERT_TRUE(t.prepare_commit().is_ok());  // written, never committed
  auto& t2 = start({}, {part(0, "events-0", 0)});
  // a and b were committed: duplicates; c's round was not: it comes out.
  EXPECT_THAT(t2.process({event("a", 0), event("b", 1), event("c", 2)}).kept, ElementsAre(2u));
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
