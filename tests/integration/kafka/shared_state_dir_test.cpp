// Two hosts given one kafka sink state.dir would share one transactional.id and fence
// each other's transactions in a loop, with only librdkafka's "fenced" to say why. The
// second host is refused instead, with a config error naming the directory and the
// process that has it; the first one runs on undisturbed, and once it is gone the
// directory is free again.
#include <gtest/gtest.h>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "output_checks.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

TEST(SharedStateDir, ASecondHostOnOneSinkStateDirIsRefusedAndTheFirstRunsOn) {
  const std::string in = unique_name("ssd-in"), out = unique_name("ssd-out"), group = unique_name("ssd-g");
  const fs::path dir = temp_dir("shared-state-dir");
  create_in_out_topics(in, out);
  const long long records = 40000, rate = 1000;  // ~40 s of input
  auto producer = produce_while_running(in, records, rate, "0", 11, dir / "producer.log");
  const std::string b = kafka_bootstrap();
  write_file(dir / "host.yaml",
             "pipelines:\n"
             "  - name: shared\n"
             "    delivery: exactly_once\n"
             "    commit: { interval: 300ms }\n"
             "    source:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: " + b + "\n        group.id: " + group + "\n"
             "        topics: [" + in + "]\n"
             "    sink:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: " + b + "\n        topic: " + out + "\n"
             "        partitioning: input\n"
             "        state.dir: " + (dir / "state").string() + "\n");
  Host first("first", dir / "host.yaml", dir / "first.log");
  first.start();
  ASSERT_TRUE(wait_committed(group, in, 1, std::chrono::seconds(60))) << first.log_tail();

  Host second("second", dir / "host.yaml", dir / "second.log");
  second.start();
  int code = -1;
  ASSERT_TRUE(wait_for([&] { return second.exited_by_itself(&code); }, std::chrono::seconds(60)))
      << second.log_tail();
  EXPECT_EQ(code, 1) << second.log_tail();
  const std::string refused = read_file(second.log());
  EXPECT_NE(refused.find("already runs from " + (dir / "state").string()), std::string::npos) << refused;
  EXPECT_NE(refused.find("(pid " + std::to_string(first.pid()) + ")"), std::string::npos) << refused;
  EXPECT_NE(refused.find("key 'state.dir'"), std::string::npos) << refused;

  // The first host was not disturbed: it was never fenced, and it takes the whole input.
  EXPECT_TRUE(wait_for([&] { return producer->exited(&code); }, std::chrono::seconds(180)));
  EXPECT_TRUE(wait_committed(group, in, records, std::chrono::seconds(120)))
      << "committed " << committed_total(group, in) << " of " << records << first.log_tail();
  EXPECT_EQ(read_file(first.log()).find("fenced"), std::string::npos) << first.log_tail();
  EXPECT_EQ(first.stop(SIGTERM), 0) << first.log_tail();

  // With the first host gone, the directory is the next one's.
  Host third("third", dir / "host.yaml", dir / "third.log");
  third.start();
  EXPECT_TRUE(wait_for([&] { return read_file(third.log()).find("running (kafka") != std::string::npos; },
                       std::chrono::seconds(60)))
      << third.log_tail();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(read_file(third.log()).find("already runs from"), std::string::npos) << third.log_tail();
  EXPECT_EQ(third.stop(SIGTERM), 0) << third.log_tail();
}

}  // namespace
