// An operator adds partitions to the input topic of a running exactly_once dedupe
// pipeline (kafka-topics.sh --alter --partitions N). The source sees the new partitions
// at its next metadata refresh and the group rebalances; the dedupe stage opens stores
// for them, whose claims belong in partitions of the changelog that do not exist yet:
// the sink grows the changelog to match instead of refusing the partitions (which had
// left the pipeline failing for good). The host is killed with SIGKILL while the input
// still arrives on the new partitions, restarted on the same state, and an independent
// read_committed reader then finds every distinct id exactly once.
#include <gtest/gtest.h>

#include <csignal>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "output_checks.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

// Partition count of `topic` as the reader's end-offsets answer lists it.
int partitions_of(const std::string& topic) {
  auto r = kafka_tool("end-offsets --topic " + topic, false);
  return r.exit_code == 0 ? count_of(r.out, "\"end\":") : -1;
}

TEST(InputGrowth, PartitionsAddedToTheInputWhileRunningGrowTheChangelogAndKeepExactlyOnce) {
  const std::string in = unique_name("grow-in"), out = unique_name("grow-out"),
                    group = unique_name("grow-g"), changelog = unique_name("grow-changelog");
  const fs::path dir = temp_dir("input-growth");
  kafka_tool("create-topic --topic " + in + " --partitions 2");
  kafka_tool("create-topic --topic " + out + " --partitions 4");
  const std::string b = kafka_bootstrap();
  write_file(dir / "host.yaml",
             "pipelines:\n"
             "  - name: growing\n"
             "    delivery: exactly_once\n"
             "    commit: { interval: 300ms }\n"
             "    restart: { backoff.initial: 200ms, backoff.max: 2s }\n"
             "    source:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: " + b + "\n        group.id: " + group + "\n"
             "        topics: [" + in + "]\n"
             // librdkafka looks for new partitions every 5 minutes by default.
             "        rdkafka: { session.timeout.ms: 6000, topic.metadata.refresh.interval.ms: 1000 }\n"
             "    transforms:\n      - plugin: dedupe\n        config:\n"
             "          id.json: /messageId\n"
             "          changelog.topic: " + changelog + "\n"
             "          state.dir: " + (dir / "dedupe").string() + "\n"
             "    sink:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: " + b + "\n        topic: " + out + "\n"
             "        partitioning: input\n"
             "        state.dir: " + (dir / "sink").string() + "\n");
  const long long first = 3000, second = 20000;
  Host host("host", dir / "host.yaml", dir / "host.log");
  auto before = produce_while_running(in, first, 1000, "0.1", 5, dir / "producer-1.log");
  host.start();
  ASSERT_TRUE(wait_for([&] {
    return read_file(host.log()).find("created changelog topic " + changelog + " (2 partitions") !=
           std::string::npos;
  }, std::chrono::seconds(90))) << host.log_tail();
  EXPECT_EQ(before->wait(), 0) << read_file(dir / "producer-1.log");

  // The operator's change, then input on all four partitions while the host runs.
  kafka_tool("create-topic --topic " + in + " --partitions 4 --grow");
  auto after = produce_while_running(in, second, 1000, "0.1", 6, dir / "producer-2.log");
  EXPECT_TRUE(wait_for([&] {
    return read_file(host.log()).find("changelog topic " + changelog + " grown from 2 to 4 partitions") !=
           std::string::npos;
  }, std::chrono::seconds(90))) << host.log_tail();
  EXPECT_EQ(read_file(host.log()).find("needs at least"), std::string::npos) << host.log_tail();
  // The new partitions' records are committed by this same process (whose changelog
  // readers knew the changelog before it grew): more than the old partitions alone could
  // have committed, half of the second input. Its readers' stale metadata made each new
  // changelog partition "Local: Unknown partition" for minutes, and the stage refused them.
  EXPECT_TRUE(wait_for([&] { return committed_total(group, in) > first + second * 6 / 10; },
                       std::chrono::seconds(90)))
      << "committed " << committed_total(group, in) << "\n" << host.log_tail();
  EXPECT_EQ(read_file(host.log()).find("refused the assignment"), std::string::npos) << host.log_tail();
  EXPECT_EQ(read_file(host.log()).find("Unknown partition"), std::string::npos) << host.log_tail();
  kill_in_flight_and_finish(host, *after, dir / "producer-2.log", group, in, first + second);
  EXPECT_EQ(partitions_of(changelog), 4);
  wait_output_settled(out);
  auto v = expect_dedupe_exactly_once(in, out, first + second);
  EXPECT_GT(json_number(v.out, "input"), json_number(v.out, "distinct_ids"));  // duplicates were dropped
}

}  // namespace
