// An output topic whose max.message.bytes is below librdkafka's 1 MB batches. The broker
// refuses a whole batch over the topic's limit and librdkafka does not split it: every
// transaction that carried a full batch failed and the pipeline replayed the same round
// for ever (1 KB records into a topic of max.message.bytes=100000: 36 aborts, nothing
// committed, 2026-12-06). The sink reads the limit when it opens and sizes its batches
// and records to it: the small records all arrive, and one record larger than the topic
// takes goes to the error policy (a dead-letter topic) instead of stopping the pipeline.
#include <gtest/gtest.h>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "output_checks.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

TEST(TopicLimit, BatchesFitTheOutputTopicsMaxMessageBytesAndALargerRecordIsDeadLettered) {
  const std::string in = unique_name("limit-in"), out = unique_name("limit-out"),
                    dlq = unique_name("limit-dlq"), group = unique_name("limit-g");
  const fs::path dir = temp_dir("topic-limit");
  kafka_tool("create-topic --topic " + in + " --partitions 2");
  kafka_tool("create-topic --topic " + out + " --partitions 2 --config max.message.bytes=100000");
  kafka_tool("create-topic --topic " + dlq + " --partitions 1");
  // Small records, one over the output topic's limit, small records again: all waiting
  // before the host starts, so that its batches are as full as they get.
  kafka_tool("produce --topic " + in + " --count 20000 --size 1000 --partitions 2 --keyed --seed 31");
  kafka_tool("produce --topic " + in + " --count 1 --size 300000 --partitions 2 --keyed --seed 32");
  kafka_tool("produce --topic " + in + " --count 5000 --size 1000 --partitions 2 --keyed --seed 33");
  const long long input = 25001;
  const std::string b = kafka_bootstrap();
  write_file(dir / "host.yaml",
             "pipelines:\n"
             "  - name: limited\n"
             "    delivery: exactly_once\n"
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
             "        partitioning: input\n        state.dir: " + (dir / "sink").string() + "\n");
  Host host("host", dir / "host.yaml", dir / "host.log");
  host.start();
  EXPECT_TRUE(wait_committed(group, in, input, std::chrono::seconds(120)))
      << "committed " << committed_total(group, in) << " of " << input << "\n" << host.log_tail();
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
  const std::string log = read_file(host.log());
  EXPECT_NE(log.find("topic " + out + " takes record batches of at most 100000 bytes"), std::string::npos)
      << host.log_tail();
  EXPECT_EQ(log.find("Message size too large"), std::string::npos) << host.log_tail();
  wait_output_settled(out);
  EXPECT_EQ(count_committed(out), input - 1);
  EXPECT_EQ(count_committed(dlq), 1);
}

}  // namespace
