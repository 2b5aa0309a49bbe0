// A group member killed between sending its offsets to its transaction and committing it
// leaves those offsets unstable: every read_committed fetch of them waits until that
// transaction ends, at its transaction.timeout. The host that takes its partitions over
// reads exactly those offsets while it is being assigned, so it must find the member
// gone and fence its transactional id there, not only after the assignment (which could
// never finish first). The killed member is a stand-in (kafka-tool.sh hold-offsets) so
// that the kill lands in that window every time, not by luck; its transaction's timeout
// is 5 minutes, so a host that waited for it would be seen stalling.
#include <gtest/gtest.h>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "output_checks.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

TEST(DepartedFence, AHostTakingOverOffsetsLeftInAKilledMembersTransactionFencesItFirst) {
  const std::string in = unique_name("df-in"), out = unique_name("df-out"), group = unique_name("df-g");
  const fs::path dir = temp_dir("departed-fence");
  create_in_out_topics(in, out);
  const long long records = 60000, rate = 1000;  // ~60 s of input
  auto producer = produce_while_running(in, records, rate, "0.1", 9, dir / "producer.log");
  const std::string b = kafka_bootstrap();
  write_file(dir / "host.yaml",
             "pipelines:\n"
             "  - name: fencing\n"
             "    delivery: exactly_once\n"
             "    commit: { interval: 300ms }\n"
             "    restart: { backoff.initial: 200ms, backoff.max: 2s }\n"
             "    source:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: " + b + "\n        group.id: " + group + "\n"
             "        topics: [" + in + "]\n"
             "        rdkafka: { session.timeout.ms: 6000 }\n"
             "    transforms:\n      - plugin: dedupe\n        config:\n"
             "          id.json: /messageId\n"
             "          changelog.topic: " + in + "-changelog\n"
             "          state.dir: " + (dir / "host" / "dedupe").string() + "\n"
             "    sink:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: " + b + "\n        topic: " + out + "\n"
             "        partitioning: input\n"
             "        state.dir: " + (dir / "host" / "sink").string() + "\n");
  Host host("host", dir / "host.yaml", dir / "host.log");
  host.start();
  ASSERT_TRUE(wait_committed(group, in, 1, std::chrono::seconds(60)))
      << host.log_tail();

  // One of this pipeline's members by its client id (the prefix fence.departed looks for).
  const std::string zombie_id = "exactly-fencing-stand-in";
  Child zombie({tools_dir() + "/kafka-tool.sh", "hold-offsets", "--group", group, "--topic", in,
                "--client-id", zombie_id, "--txn-timeout-ms", "300000", "--bootstrap", b},
               dir / "zombie.log");
  ASSERT_TRUE(wait_for([&] { return read_file(dir / "zombie.log").find("holding ") != std::string::npos; },
                       std::chrono::seconds(90)))
      << read_file(dir / "zombie.log") << host.log_tail();
  std::printf("stand-in: %s", read_file(dir / "zombie.log").c_str());
  // The host describes the group after the rebalance the stand-in caused, and so knows it.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  int code = -1;
  ASSERT_FALSE(producer->exited(&code)) << "the producer finished before the kill; slow it down";
  const size_t before = read_file(host.log()).size();
  zombie.kill(SIGKILL);
  const auto killed_at = Clock::now();

  // The host fences the stand-in's id while it takes the partitions over...
  EXPECT_TRUE(wait_for([&] {
    return read_file(host.log()).substr(before).find("fenced " + zombie_id + " in ") != std::string::npos;
  }, std::chrono::seconds(90))) << tail_of(read_file(host.log()).substr(before), 6000);
  std::printf("fenced after %.1f s\n", seconds_since(killed_at));
  // ... without giving up on the assignment (which waiting for the transaction to time
  // out would have made it do, and rejoin).
  EXPECT_TRUE(wait_for([&] { return producer->exited(&code); }, std::chrono::seconds(180)));
  EXPECT_EQ(code, 0) << tail_of(read_file(dir / "producer.log"), 2000);
  bool caught_up = wait_committed(group, in, records, std::chrono::seconds(120));
  EXPECT_TRUE(caught_up) << "committed " << committed_total(group, in) << " of " << records;
  const std::string after = read_file(host.log()).substr(before);
  EXPECT_EQ(after.find("cannot read the committed offsets"), std::string::npos) << tail_of(after, 6000);
  EXPECT_EQ(host.stop(SIGTERM), 0);
  wait_output_settled(out);
  expect_dedupe_exactly_once(in, out, records);
  expect_markers_visible(out);
  if (::testing::Test::HasFailure()) std::printf("%s\n", tail_of(read_file(host.log()), 8000).c_str());
}

}  // namespace
