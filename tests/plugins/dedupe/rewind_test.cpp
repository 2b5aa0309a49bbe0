// Input the source's committed offsets were moved back over (an operator's
// kafka-consumer-groups --reset-offsets), without a changelog: the stage cannot tell a
// rewind from a sink's unfinished work, and replays come out. With a changelog a
// committed range is dropped as duplicates (changelog_test.cpp, "MovedBack").
#include "dedupe_fixture.hpp"

using namespace dedupe_test;
using ::testing::ElementsAre;

namespace {

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
  EXPECT_FALSE(logged(host_, "has no committed offset"));
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
  // Said, with the partition and how far the store had seen (a group.id changed by a
  // reload did this without a word: QA).
  EXPECT_TRUE(logged(host_, "partition events-0 has no committed offset in the source's group"));
  EXPECT_TRUE(logged(host_, "has seen the input up to offset 2"));
}

}  // namespace
