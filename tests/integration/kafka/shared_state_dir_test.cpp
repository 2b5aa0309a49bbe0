// Two hosts given one kafka sink state.dir would share one transactional.id and fence
// each other's transactions in a loop, with only librdkafka's "fenced" to say why. The
// second host is refused instead, with a config error naming the directory and the
// process that has it; the first one runs on undisturbed, and once it is gone the
// directory is free again. A copied state.dir (which no lock can see) is named in the
// fenced host's error, with the fix.
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

// A state.dir copied to another machine (a cloned VM, a restored backup) escapes the
// lock: both hosts take the same transactional.id and fence each other. Nothing is lost
// or doubled (fencing is what protects the output), but the fenced host must say what
// is going on and how to fix it, not only librdkafka's "fenced".
TEST(SharedStateDir, ACopiedStateDirIsNamedWhenItsTwinFencesIt) {
  const std::string in = unique_name("csd-in"), out = unique_name("csd-out"), group = unique_name("csd-g");
  const fs::path dir = temp_dir("copied-state-dir");
  create_in_out_topics(in, out);
  const long long records = 40000, rate = 1000;  // ~40 s of input
  auto producer = produce_while_running(in, records, rate, "0", 12, dir / "producer.log");
  const std::string b = kafka_bootstrap();
  auto yaml = [&](const std::string& state) {
    return "pipelines:\n"
           "  - name: cloned\n"
           "    delivery: exactly_once\n"
           "    commit: { interval: 300ms }\n"
           "    restart: { backoff.initial: 200ms, backoff.max: 2s }\n"
           "    source:\n      plugin: kafka\n      config:\n"
           "        bootstrap.servers: " + b + "\n        group.id: " + group + "\n"
           "        topics: [" + in + "]\n"
           "        rdkafka: { session.timeout.ms: 6000 }\n"
           "    sink:\n      plugin: kafka\n      config:\n"
           "        bootstrap.servers: " + b + "\n        topic: " + out + "\n"
           "        partitioning: input\n"
           "        state.dir: " + (dir / state).string() + "\n";
  };
  write_file(dir / "a.yaml", yaml("a"));
  write_file(dir / "b.yaml", yaml("b"));
  Host a("a", dir / "a.yaml", dir / "a.log");
  a.start();
  ASSERT_TRUE(wait_committed(group, in, 1, std::chrono::seconds(60))) << a.log_tail();
  EXPECT_EQ(a.stop(SIGTERM), 0) << a.log_tail();
  fs::copy(dir / "a", dir / "b", fs::copy_options::recursive);  // the clone
  a.start();
  Host twin("b", dir / "b.yaml", dir / "b.log");
  twin.start();
  const std::string hint = "another live host uses a copy of this state.dir";
  EXPECT_TRUE(wait_for([&] {
    return read_file(a.log()).find(hint) != std::string::npos ||
           read_file(twin.log()).find(hint) != std::string::npos;
  }, std::chrono::seconds(120))) << a.log_tail() << twin.log_tail();
  const std::string both = read_file(a.log()) + read_file(twin.log());
  // The fenced one names its own id file (either twin may be the one fenced).
  EXPECT_TRUE(both.find("delete the id file, here " + (dir / "b" / "kafka-sink" / "cloned.instance-id").string()) != std::string::npos ||
              both.find("delete the id file, here " + (dir / "a" / "kafka-sink" / "cloned.instance-id").string()) != std::string::npos)
      << tail_of(both, 6000);
  int code = -1;
  EXPECT_FALSE(producer->exited(&code)) << "the input was complete before the twins met";
  // The fix: the copy goes; the original takes the rest. Exactly once throughout.
  twin.stop(SIGKILL);
  EXPECT_TRUE(wait_for([&] { return producer->exited(&code); }, std::chrono::seconds(180)));
  EXPECT_TRUE(wait_committed(group, in, records, std::chrono::seconds(180)))
      << "committed " << committed_total(group, in) << " of " << records << a.log_tail();
  EXPECT_EQ(a.stop(SIGTERM), 0) << a.log_tail();
  wait_output_settled(out);
  auto v = kafka_tool("verify --input-topic " + in + " --output-topic " + out + " --mode copy", false);
  std::printf("independent reader: %s", v.out.c_str());
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_EQ(answer(v, "missing"), 0);
  EXPECT_EQ(answer(v, "duplicated"), 0);
}

}  // namespace
