// The rules the kafka sink reads from a topic's configs (topic_rules.hpp), as the broker
// applies them (Kafka 3.9 LogConfig / LogValidator).
#include "topic_rules.hpp"

#include <gtest/gtest.h>

using exactly::kafka::TopicRules;
using exactly::kafka::topic_rules_from;

namespace {

const int64_t kNow = 1'800'000'000'000;

ex_record record(const char* key, int64_t ts) {
  ex_record r{};
  if (key != nullptr) r.key = ex_bytes{reinterpret_cast<const uint8_t*>(key), std::char_traits<char>::length(key)};
  r.timestamp_ms = ts;
  return r;
}

std::map<std::string, std::string> defaults() {
  // What DescribeConfigs reports for a topic that sets nothing (Kafka 3.9).
  return {{"cleanup.policy", "delete"},
          {"message.timestamp.type", "CreateTime"},
          {"message.timestamp.difference.max.ms", "9223372036854775807"},
          {"message.timestamp.before.max.ms", "9223372036854775807"},
          {"message.timestamp.after.max.ms", "9223372036854775807"}};
}

TEST(TopicRules, ATopicThatSetsNothingRefusesNothing) {
  TopicRules r = topic_rules_from(defaults());
  EXPECT_FALSE(r.any());
  EXPECT_EQ(r.refusal(record(nullptr, 0), kNow, "t"), "");
}

TEST(TopicRules, ACompactedTopicRefusesARecordWithoutAKeyButNotAnEmptyOne) {
  for (const char* policy : {"compact", "delete,compact", "compact, delete", "COMPACT"}) {
    auto c = defaults();
    c["cleanup.policy"] = policy;
    TopicRules r = topic_rules_from(c);
    EXPECT_TRUE(r.compacted) << policy;
    EXPECT_NE(r.refusal(record(nullptr, kNow), kNow, "t").find("without a key"), std::string::npos) << policy;
    EXPECT_EQ(r.refusal(record("", kNow), kNow, "t"), "") << policy;  // a key of zero bytes is a key
    EXPECT_EQ(r.refusal(record("k", kNow), kNow, "t"), "") << policy;
  }
  auto c = defaults();
  c["cleanup.policy"] = "delete";
  EXPECT_FALSE(topic_rules_from(c).compacted);
}

TEST(TopicRules, TimestampsOutsideBeforeAndAfterAreRefused) {
  auto c = defaults();
  c["message.timestamp.before.max.ms"] = "3600000";
  c["message.timestamp.after.max.ms"] = "60000";
  TopicRules r = topic_rules_from(c);
  EXPECT_EQ(r.refusal(record("k", kNow - 3'600'000), kNow, "t"), "");
  EXPECT_NE(r.refusal(record("k", kNow - 3'600'001), kNow, "t").find("before.max.ms=3600000"), std::string::npos);
  EXPECT_EQ(r.refusal(record("k", kNow + 60'000), kNow, "t"), "");
  EXPECT_NE(r.refusal(record("k", kNow + 60'001), kNow, "t").find("after.max.ms=60000"), std::string::npos);
  // No timestamp: the producer stamps its own clock.
  EXPECT_EQ(r.refusal(record("k", -1), kNow, "t"), "");
}

TEST(TopicRules, TheDeprecatedDifferenceStandsInForLimitsLeftAtTheirDefault) {
  auto c = defaults();
  c["message.timestamp.difference.max.ms"] = "1000";
  c["message.timestamp.after.max.ms"] = "5000";
  TopicRules r = topic_rules_from(c);
  EXPECT_EQ(r.before_ms, 1000);
  EXPECT_EQ(r.after_ms, 5000);
}

TEST(TopicRules, LogAppendTimeTakesAnyTimestamp) {
  auto c = defaults();
  c["message.timestamp.type"] = "LogAppendTime";
  c["message.timestamp.before.max.ms"] = "1000";
  TopicRules r = topic_rules_from(c);
  EXPECT_EQ(r.refusal(record("k", 0), kNow, "t"), "");
}

}  // namespace
