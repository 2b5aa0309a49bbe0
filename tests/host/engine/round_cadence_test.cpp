// How long a round gathers records after a commit (engine/round_cadence.hpp).
#include <gtest/gtest.h>

#include <chrono>

#include "engine/round_cadence.hpp"

using exactly::engine::next_typical_commit;
using exactly::engine::round_length;
using ms = std::chrono::milliseconds;

TEST(RoundCadence, TheFirstRoundAndRoundsAfterNoCommitGatherTheWholeInterval) {
  EXPECT_EQ(round_length(ms(100), ms(0), ms(0)), ms(100));
  EXPECT_EQ(round_length(ms(1000), ms(0), ms(30)), ms(1000));
}

TEST(RoundCadence, AShortCommitIsTakenOutOfTheNextRound) {
  // Commits start every interval: 100 ms rounds with 30 ms commits become 70 + 30.
  EXPECT_EQ(round_length(ms(100), ms(30), ms(30)), ms(70));
  EXPECT_EQ(round_length(ms(1000), ms(120), ms(120)), ms(880));
}

TEST(RoundCadence, UnderCommitsThatStaySlowARoundLastsAtLeastAsLongAsTheyDo) {
  // Half the interval or more: the round gathers as long as commits take, so the
  // pipeline never spends more time committing than processing.
  EXPECT_EQ(round_length(ms(100), ms(50), ms(50)), ms(50));
  EXPECT_EQ(round_length(ms(100), ms(70), ms(70)), ms(70));
  EXPECT_EQ(round_length(ms(100), ms(100), ms(100)), ms(100));
  EXPECT_EQ(round_length(ms(100), ms(450), ms(450)), ms(100));
}

TEST(RoundCadence, ASingleSlowCommitDoesNotStretchTheNextRound) {
  // Typically 20 ms; one commit took 200 ms: its records are old already, the next
  // round is short (the typical commit), not a whole interval.
  ms typical = ms(20);
  for (int i = 0; i < 20; ++i) typical = next_typical_commit(typical, ms(20));
  typical = next_typical_commit(typical, ms(200));
  EXPECT_EQ(typical, ms(43));  // 20 - 20/8 + 200/8 = 20 - 2 + 25 (integer ms)
  EXPECT_EQ(round_length(ms(100), ms(200), typical), ms(43));
}

TEST(RoundCadence, TheTypicalCommitFollowsALastingChangeWithinAFewRounds) {
  EXPECT_EQ(next_typical_commit(ms(0), ms(35)), ms(35));  // the first commit is the average
  ms typical = ms(20);
  for (int i = 0; i < 30; ++i) typical = next_typical_commit(typical, ms(150));
  EXPECT_GE(typical, ms(140));
  EXPECT_EQ(round_length(ms(100), ms(150), typical), ms(100));
}

using exactly::engine::round_end;
using exactly::engine::round_min_length;
using TP = std::chrono::steady_clock::time_point;

TEST(RoundCadence, ARoundOfLateInputEndsOnceItsOldestRecordHasWaitedTheInterval) {
  const TP start{ms(10000)};
  // Records polled at 30 ms of age: due 70 ms into the round, before the cadence's 80.
  TP due = start + ms(70);
  EXPECT_EQ(round_end(start, ms(80), ms(40), &due), start + ms(70));
  // Late input (a stall upstream): due already; the round still gathers min_round.
  due = start - ms(150);
  EXPECT_EQ(round_end(start, ms(80), ms(40), &due), start + ms(40));
  // Input of normal age, or none with a timestamp: the cadence decides.
  due = start + ms(95);
  EXPECT_EQ(round_end(start, ms(80), ms(40), &due), start + ms(80));
  EXPECT_EQ(round_end(start, ms(80), ms(40), static_cast<const TP*>(nullptr)), start + ms(80));
  // A round shorter than min_round (after a commit that took most of the interval)
  // keeps its own length.
  due = start - ms(150);
  EXPECT_EQ(round_end(start, ms(25), ms(40), &due), start + ms(25));
}

TEST(RoundCadence, TheShortestRoundIsAQuarterIntervalOrTwoTypicalCommits) {
  EXPECT_EQ(round_min_length(ms(100), ms(5)), ms(25));
  EXPECT_EQ(round_min_length(ms(100), ms(20)), ms(40));
  EXPECT_EQ(round_min_length(ms(100), ms(80)), ms(100));
  EXPECT_EQ(round_min_length(ms(1000), ms(20)), ms(250));
}

using exactly::engine::backlog_age;

TEST(RoundCadence, InputIsABacklogFromTwoSecondsOrTwoIntervalsOfAge) {
  // Above a stall's 0.1-1 s, and above the interval, the age from which rounds end early.
  EXPECT_EQ(backlog_age(ms(100)), ms(2000));
  EXPECT_EQ(backlog_age(ms(1000)), ms(2000));
  EXPECT_EQ(backlog_age(ms(2000)), ms(4000));
  EXPECT_EQ(backlog_age(ms(5000)), ms(10000));
}
