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

std::string pipeline_yaml(const std::string& delivery, const std::string& in, const std::string& out,
                          const std::string& dlq, const std::string& group, const fs::path& dir) {
  const std::string b = kafka_bootstrap();
  return "pipelines:\n"
         "  - name: rules\n"
         "    delivery: " + delivery + "\n"
         "    commit: { interval: 300ms }\n"
         "    restart: { backoff.initial: 200ms, backoff.max: 2s }\n"
         "    errors:\n      policy: dead-letter\n      dead-letter:\n        plugin: kafka\n"
         "        config: { bootstrap.servers: \"" + b + "\", topic: " + dlq + ", state.dir: " +
         (dir / "dlq").string() + " }\n"
         "    source:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: \"" + b + "\"\n        group.id: " + group + "\n"
         "        topics: [" + in + "]\n"
         "    sink:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: \"" + b + "\"\n        topic: " + out + "\n"
         "        state.dir: " + (dir / "sink").string() + "\n";
}

TEST(RecordRules, RecordsWithoutAKeyForACompactedTopicAreDeadLetteredNotReplayed) {
  const std::string in = unique_name("rules-in"), out = unique_name("rules-out"),
                    dlq = unique_name("rules-dlq"), group = unique_name("rules-g");
  const fs::path dir = temp_dir("record-rules-key");
  kafka_tool("create-topic --topic " + in + " --partitions 2");
  kafka_tool("create-topic --topic " + out + " --partitions 2 --config cleanup.policy=compact");
  kafka_tool("create-topic --topic " + dlq + " --partitions 1");
  kafka_tool("produce --topic " + in + " --count 3000 --partitions 2 --keyed --seed 41");
  kafka_tool("produce --topic " + in + " --count 40 --partitions 2 --null-keys --seed 42");
  kafka_tool("produce --topic " + in + " --count 3000 --partitions 2 --keyed --seed 43");
  const long long input = 6040;
  write_file(dir / "host.yaml", pipeline_yaml("exactly_once", in, out, dlq, group, dir));
  Host host("host", dir / "host.yaml", dir / "host.log");
  host.start();
  EXPECT_TRUE(wait_committed(group, in, input, std::chrono::seconds(90)))
      << "committed " << committed_total(group, in) << " of " << input << "\n" << host.log_tail();
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
  const std::string log = read_file(host.log());
  EXPECT_NE(log.find("topic " + out + " is compacted"), std::string::npos) << host.log_tail();
  EXPECT_EQ(log.find("aborting round"), std::string::npos) << host.log_tail();
  wait_output_settled(out);
  EXPECT_EQ(count_committed(out), 6000);
  EXPECT_EQ(count_committed(dlq), 40);
}

TEST(RecordRules, RecordsOlderThanTheTopicTakesAreDeadLetteredAndTheirNeighboursSentOnce) {
  const std::string in = unique_name("rules-in"), out = unique_name("rules-out"),
                    dlq = unique_name("rules-dlq"), group = unique_name("rules-g");
  const fs::path dir = temp_dir("record-rules-time");
  kafka_tool("create-topic --topic " + in + " --partitions 2");
  kafka_tool("create-topic --topic " + out + " --partitions 2 --config message.timestamp.before.max.ms=3600000");
  kafka_tool("create-topic --topic " + dlq + " --partitions 1");
  const long long two_days_ago =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count() -
      2LL * 24 * 3600 * 1000;
  kafka_tool("produce --topic " + in + " --count 2000 --partitions 2 --keyed --seed 51");
  kafka_tool("produce --topic " + in + " --count 30 --partitions 2 --keyed --seed 52 --timestamp-ms " +
             std::to_string(two_days_ago));
  kafka_tool("produce --topic " + in + " --count 2000 --partitions 2 --keyed --seed 53");
  const long long input = 4030;
  // at_least_once: a replayed round would send its good records again, so the exact count
  // of the output shows that no round was replayed.
  write_file(dir / "host.yaml", pipeline_yaml("at_least_once", in, out, dlq, group, dir));
  Host host("host", dir / "host.yaml", dir / "host.log");
  host.start();
  EXPECT_TRUE(wait_committed(group, in, input, std::chrono::seconds(90)))
      << "committed " << committed_total(group, in) << " of " << input << "\n" << host.log_tail();
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
  const std::string log = read_file(host.log());
  EXPECT_NE(log.find("message.timestamp.before.max.ms=3600000"), std::string::npos) << host.log_tail();
  EXPECT_EQ(log.find("aborting round"), std::string::npos) << host.log_tail();
  EXPECT_EQ(count_committed(out), 4000);
  EXPECT_EQ(count_committed(dlq), 30);
}

// The rules are read once per topic; a topic compacted while the sink runs fails one
// round, after which the sink reads them again and the replay dead-letters the record.
TEST(RecordRules, ATopicCompactedWhileTheSinkRunsCostsOneRound) {
  const std::string in = unique_name("rules-in"), out = unique_name("rules-out"),
                    dlq = unique_name("rules-dlq"), group = unique_name("rules-g");
  const fs::path dir = temp_dir("record-rules-alter");
  kafka_tool("create-topic --topic " + in + " --partitions 2");
  kafka_tool("create-topic --topic " + out + " --partitions 2");
  kafka_tool("create-topic --topic " + dlq + " --partitions 1");
  write_file(dir / "host.yaml", pipeline_yaml("exactly_once", in, out, dlq, group, dir));
  Host host("host", dir / "host.yaml", dir / "host.log");
  host.start();
  kafka_tool("produce --topic " + in + " --count 2000 --partitions 2 --keyed --seed 61");
  EXPECT_TRUE(wait_committed(group, in, 2000, std::chrono::seconds(60)))
      << "committed " << committed_total(group, in) << " of 2000\n" << host.log_tail();
  EXPECT_EQ(read_file(host.log()).find("is compacted"), std::string::npos) << host.log_tail();
  kafka_tool("alter-topic-config --topic " + out + " --config cleanup.policy=compact");
  kafka_tool("produce --topic " + in + " --count 20 --partitions 2 --null-keys --seed 62");
  kafka_tool("produce --topic " + in + " --count 1000 --partitions 2 --keyed --seed 63");
  EXPECT_TRUE(wait_committed(group, in, 3020, std::chrono::seconds(90)))
      << "committed " << committed_total(group, in) << " of 3020\n" << host.log_tail();
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
  const std::string log = read_file(host.log());
  EXPECT_NE(log.find("topic " + out + " is compacted"), std::string::npos) << host.log_tail();
  // The round written before the sink knew: refused by the broker, aborted, replayed once
  // (without reading the rules again, every replay failed alike until the host rebuilt
  // the sink after 10 aborts in a row).
  EXPECT_GE(count_of(log, "aborting round"), 1) << host.log_tail();
  EXPECT_LE(count_of(log, "aborting round"), 2) << host.log_tail();
  wait_output_settled(out);
  EXPECT_EQ(count_committed(out), 3000);
  EXPECT_EQ(count_committed(dlq), 20);
}

}  // namespace
