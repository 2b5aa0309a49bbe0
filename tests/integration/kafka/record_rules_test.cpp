// Records an output topic's own configuration refuses one by one: no key in a compacted
// topic (INVALID_RECORD), a CreateTime outside message.timestamp.before.max.ms
// (INVALID_TIMESTAMP). The broker refuses the whole batch that carries one, so the round
// failed at delivery and was replayed for ever: exactly_once stalled with nothing
// committed, at_least_once sent its good records again at every replay (QA: 25 copies
// each). The sink reads the topic's rules and sends such a record to the error policy.
#include <gtest/gtest.h>

#include <chrono>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "output_checks.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

struct Topics {
  std::string in = unique_name("rules-in"), out = unique_name("rules-out"), dlq = unique_name("rules-dlq"),
              group = unique_name("rules-g");
  fs::path dir;
};

// The input (2 partitions), the output with `out_config` (--config k=v, or empty) and a
// dead-letter topic.
Topics make_topics(const std::string& tag, const std::string& out_config) {
  Topics t;
  t.dir = temp_dir(tag);
  kafka_tool("create-topic --topic " + t.in + " --partitions 2");
  kafka_tool("create-topic --topic " + t.out + " --partitions 2" + (out_config.empty() ? "" : " --config " + out_config));
  kafka_tool("create-topic --topic " + t.dlq + " --partitions 1");
  return t;
}

std::string pipeline_yaml(const std::string& delivery, const Topics& t) {
  const std::string b = kafka_bootstrap();
  return "pipelines:\n"
         "  - name: rules\n"
         "    delivery: " + delivery + "\n"
         "    commit: { interval: 300ms }\n"
         "    restart: { backoff.initial: 200ms, backoff.max: 2s }\n"
         "    errors:\n      policy: dead-letter\n      dead-letter:\n        plugin: kafka\n"
         "        config: { bootstrap.servers: \"" + b + "\", topic: " + t.dlq + ", state.dir: " +
         (t.dir / "dlq").string() + " }\n"
         "    source:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: \"" + b + "\"\n        group.id: " + t.group + "\n"
         "        topics: [" + t.in + "]\n"
         "    sink:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: \"" + b + "\"\n        topic: " + t.out + "\n"
         "        state.dir: " + (t.dir / "sink").string() + "\n";
}

// Runs the pipeline until `input` records are committed, stops it; its log.
std::string run_to(const Topics& t, const std::string& delivery, long long input) {
  write_file(t.dir / "host.yaml", pipeline_yaml(delivery, t));
  Host host("host", t.dir / "host.yaml", t.dir / "host.log");
  host.start();
  EXPECT_TRUE(wait_committed(t.group, t.in, input, std::chrono::seconds(90)))
      << "committed " << committed_total(t.group, t.in) << " of " << input << "\n" << host.log_tail();
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
  return read_file(host.log());
}

TEST(RecordRules, RecordsWithoutAKeyForACompactedTopicAreDeadLetteredNotReplayed) {
  const Topics t = make_topics("record-rules-key", "cleanup.policy=compact");
  kafka_tool("produce --topic " + t.in + " --count 3000 --partitions 2 --keyed --seed 41");
  kafka_tool("produce --topic " + t.in + " --count 40 --partitions 2 --null-keys --seed 42");
  kafka_tool("produce --topic " + t.in + " --count 3000 --partitions 2 --keyed --seed 43");
  const std::string log = run_to(t, "exactly_once", 6040);
  EXPECT_NE(log.find("topic " + t.out + " is compacted"), std::string::npos) << tail_of(log, 4000);
  EXPECT_EQ(log.find("aborting round"), std::string::npos) << tail_of(log, 4000);
  wait_output_settled(t.out);
  EXPECT_EQ(count_committed(t.out), 6000);
  EXPECT_EQ(count_committed(t.dlq), 40);
}

TEST(RecordRules, RecordsOlderThanTheTopicTakesAreDeadLetteredAndTheirNeighboursSentOnce) {
  const Topics t = make_topics("record-rules-time", "message.timestamp.before.max.ms=3600000");
  const long long two_days_ago =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count() -
      2LL * 24 * 3600 * 1000;
  kafka_tool("produce --topic " + t.in + " --count 2000 --partitions 2 --keyed --seed 51");
  kafka_tool("produce --topic " + t.in + " --count 30 --partitions 2 --keyed --seed 52 --timestamp-ms " +
             std::to_string(two_days_ago));
  kafka_tool("produce --topic " + t.in + " --count 2000 --partitions 2 --keyed --seed 53");
  // at_least_once: a replayed round would send its good records again, so the exact count
  // of the output shows that no round was replayed.
  const std::string log = run_to(t, "at_least_once", 4030);
  EXPECT_NE(log.find("message.timestamp.before.max.ms=3600000"), std::string::npos) << tail_of(log, 4000);
  EXPECT_EQ(log.find("aborting round"), std::string::npos) << tail_of(log, 4000);
  EXPECT_EQ(count_committed(t.out), 4000);
  EXPECT_EQ(count_committed(t.dlq), 30);
}

// The rules are read once per topic; a topic compacted while the sink runs fails one
// round, after which the sink reads them again and the replay dead-letters the record.
TEST(RecordRules, ATopicCompactedWhileTheSinkRunsCostsOneRound) {
  const Topics t = make_topics("record-rules-alter", "");
  write_file(t.dir / "host.yaml", pipeline_yaml("exactly_once", t));
  Host host("host", t.dir / "host.yaml", t.dir / "host.log");
  host.start();
  kafka_tool("produce --topic " + t.in + " --count 2000 --partitions 2 --keyed --seed 61");
  EXPECT_TRUE(wait_committed(t.group, t.in, 2000, std::chrono::seconds(60)))
      << "committed " << committed_total(t.group, t.in) << " of 2000\n" << host.log_tail();
  EXPECT_EQ(read_file(host.log()).find("is compacted"), std::string::npos) << host.log_tail();
  kafka_tool("alter-topic-config --topic " + t.out + " --config cleanup.policy=compact");
  kafka_tool("produce --topic " + t.in + " --count 20 --partitions 2 --null-keys --seed 62");
  kafka_tool("produce --topic " + t.in + " --count 1000 --partitions 2 --keyed --seed 63");
  EXPECT_TRUE(wait_committed(t.group, t.in, 3020, std::chrono::seconds(90)))
      << "committed " << committed_total(t.group, t.in) << " of 3020\n" << host.log_tail();
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
  const std::string log = read_file(host.log());
  EXPECT_NE(log.find("topic " + t.out + " is compacted"), std::string::npos) << host.log_tail();
  // The round written before the sink knew: refused by the broker, aborted, replayed once
  // (without reading the rules again, every replay failed alike until the host rebuilt
  // the sink after 10 aborts in a row).
  EXPECT_GE(count_of(log, "aborting round"), 1) << host.log_tail();
  EXPECT_LE(count_of(log, "aborting round"), 2) << host.log_tail();
  wait_output_settled(t.out);
  EXPECT_EQ(count_committed(t.out), 3000);
  EXPECT_EQ(count_committed(t.dlq), 20);
}

}  // namespace
