// How long a round gathers records after a commit (engine/round_cadence.hpp).
#include <gtest/gtest.h>

#include <chrono>

#include "engine/round_cadence.hpp"

using exactly::engine::round_length;
using ms = std::chrono::milliseconds;

TEST(RoundCadence, TheFirstRoundAndRoundsAfterNoCommitGatherTheWholeInterval) {
  EXPECT_EQ(round_length(ms(100), ms(0)), ms(100));
  EXPECT_EQ(round_length(ms(1000), ms(0)), ms(1000));
}

TEST(RoundCadence, AShortCommitIsTakenOutOfTheNextRound) {
  // Commits start every interval: 100 ms rounds with 30 ms commits become 70 + 30.
  EXPECT_EQ(round_length(ms(100), ms(30)), ms(70));
  EXPECT_EQ(round_length(ms(1000), ms(120)), ms(880));
}

TEST(RoundCadence, ARoundLastsAtLeastAsLongAsTheLastCommit) {
  // Half the interval or more: the round gathers as long as the commit took, so the
  // pipeline never spends more time committing than processing.
  EXPECT_EQ(round_length(ms(100), ms(50)), ms(50));
  EXPECT_EQ(round_length(ms(100), ms(70)), ms(70));
}

TEST(RoundCadence, CommitsLongerThanTheIntervalLeaveTheRoundAtTheInterval) {
  EXPECT_EQ(round_length(ms(100), ms(100)), ms(100));
  EXPECT_EQ(round_length(ms(100), ms(450)), ms(100));
}
