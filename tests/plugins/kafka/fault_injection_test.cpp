// EXACTLY_FAULTS parsing (pure logic): what a test arms, and what is reported as unknown.
// The faults themselves, through the real .so and a real broker: kafka_seek_fallback_test.cpp.
#include "fault_injection.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using exactly::kafka::Faults;

namespace {
const std::vector<std::string> kKnown{"kafka.source.seek"};
}

TEST(Faults, ACountedFaultFiresThatManyTimesThenNever) {
  std::vector<std::string> unknown;
  Faults f = Faults::parse("kafka.source.seek=2", kKnown, unknown);
  EXPECT_TRUE(unknown.empty());
  ASSERT_TRUE(f.armed());
  EXPECT_EQ(f.describe(), "kafka.source.seek (next 2 calls)");
  EXPECT_FALSE(f.fire("kafka.source.other"));
  EXPECT_TRUE(f.fire("kafka.source.seek"));
  EXPECT_TRUE(f.fire("kafka.source.seek"));
  EXPECT_FALSE(f.fire("kafka.source.seek"));
  EXPECT_FALSE(f.armed());
}

TEST(Faults, AFaultWithoutACountFiresEveryTime) {
  std::vector<std::string> unknown;
  Faults f = Faults::parse("kafka.source.seek", kKnown, unknown);
  EXPECT_TRUE(unknown.empty());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(f.fire("kafka.source.seek"));
  EXPECT_EQ(f.describe(), "kafka.source.seek (every call)");
}

TEST(Faults, NothingIsArmedWithoutTheVariableOrWithAnEmptyOne) {
  std::vector<std::string> unknown;
  EXPECT_FALSE(Faults::parse("", kKnown, unknown).armed());
  EXPECT_FALSE(Faults::parse(",,", kKnown, unknown).armed());
  EXPECT_TRUE(unknown.empty());
}

TEST(Faults, TyposAndBadCountsInThePluginsNamespaceAreReportedOthersLeftAlone) {
  std::vector<std::string> unknown;
  Faults f = Faults::parse("kafka.source.seeek=1,dedupe.fold=3,kafka.source.seek=0,"
                           "kafka.source.seek=x,kafka.source.seek=-2,kafka.source.seek=",
                           kKnown, unknown);
  EXPECT_FALSE(f.armed());
  EXPECT_EQ(unknown, (std::vector<std::string>{"kafka.source.seeek=1", "kafka.source.seek=0",
                                               "kafka.source.seek=x", "kafka.source.seek=-2",
                                               "kafka.source.seek="}));
}

TEST(Faults, TheLastEntryForANameWins) {
  std::vector<std::string> unknown;
  Faults f = Faults::parse("kafka.source.seek,kafka.source.seek=1", kKnown, unknown);
  EXPECT_TRUE(f.fire("kafka.source.seek"));
  EXPECT_FALSE(f.fire("kafka.source.seek"));
}
