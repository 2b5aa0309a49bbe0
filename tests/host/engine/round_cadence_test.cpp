// How long a round gathers records after a commit (engine/round_cadence.hpp).
#include <gtest/gtest.h>

#include <chrono>

#include "engine/round_cadence.hpp"

using exactly::engine::round_span;
using ms = std::chrono::milliseconds;

TEST(RoundCadence, TheFirstRoundAndRoundsAfterNoCommitGatherTheWholeInterval) {
  EXPECT_EQ(round_span(ms(100), ms(0)).cadence, ms(100));
  EXPECT_EQ(round_span(ms(100), ms(0)).longest, ms(100));
  EXPECT_EQ(round_span(ms(1000), ms(0)).cadence, ms(1000));
}

TEST(RoundCadence, AShortCommitIsTakenOutOfTheNextRound) {
  // Commits start every interval: 100 ms rounds with 30 ms commits become 70 + 30.
  EXPECT_EQ(round_span(ms(100), ms(30)).cadence, ms(70));
  EXPECT_EQ(round_span(ms(100), ms(30)).longest, ms(70));
  EXPECT_EQ(round_span(ms(1000), ms(120)).cadence, ms(880));
  EXPECT_EQ(round_span(ms(1000), ms(120)).longest, ms(880));
}

TEST(RoundCadence, WhileRecordsAreReadyARoundLastsAsLongAsTheLastCommit) {
  // Half the interval or more: a round whose source keeps delivering gathers as long as
  // the commit took, so the pipeline never spends more time committing than processing;
  // one whose source has nothing ready may end at the interval's cadence.
  EXPECT_EQ(round_span(ms(100), ms(50)).cadence, ms(50));
  EXPECT_EQ(round_span(ms(100), ms(50)).longest, ms(50));
  EXPECT_EQ(round_span(ms(100), ms(70)).cadence, ms(30));
  EXPECT_EQ(round_span(ms(100), ms(70)).longest, ms(70));
}

TEST(RoundCadence, AfterACommitLongerThanTheIntervalARoundMayEndOnceDrained) {
  EXPECT_EQ(round_span(ms(100), ms(100)).cadence, ms(0));
  EXPECT_EQ(round_span(ms(100), ms(100)).longest, ms(100));
  EXPECT_EQ(round_span(ms(100), ms(450)).cadence, ms(0));
  EXPECT_EQ(round_span(ms(100), ms(450)).longest, ms(100));
}
