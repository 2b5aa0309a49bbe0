// An operator moves the group's committed offsets back to the start of the input
// (kafka-consumer-groups --reset-offsets --to-earliest) while the host is stopped, then
// starts it again on the same state. Every record before the old position finds its own
// claim; its round was committed, so it is a duplicate now, not a replay: the output
// gains only what is new (a QA pass, 2026-12-06: all 19,027 records of a rewound range
// came out a second time). The second run is killed with SIGKILL while the input still
// arrives and restarted, so that the rounds it had not committed come out again; an
// independent read_committed reader then finds every distinct id exactly once.
#include <gtest/gtest.h>

#include <csignal>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "output_checks.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

TEST(OffsetReset, GroupOffsetsMovedBackDoNotEmitTheCommittedRangeAgain) {
  const std::string in = unique_name("reset-in"), out = unique_name("reset-out"),
                    group = unique_name("reset-g");
  const fs::path dir = temp_dir("offset-reset");
  create_in_out_topics(in, out);
  write_file(dir / "host.yaml", dedupe_host_yaml("rewound", in, out, group, dir / "state"));
  Host host("host", dir / "host.yaml", dir / "host.log");

  const long long first = 8000, second = 20000;
  auto before = produce_while_running(in, first, 2000, "0.1", 21, dir / "producer-1.log");
  host.start();
  EXPECT_EQ(before->wait(), 0) << read_file(dir / "producer-1.log");
  ASSERT_TRUE(wait_committed(group, in, first, std::chrono::seconds(120)))
      << "committed " << committed_total(group, in) << "\n" << host.log_tail();
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
  wait_output_settled(out);
  const long long out_before = count_committed(out);

  // The group is empty now: reset it to the start of every partition.
  auto reset = kafka_tool("reset-group-offsets --group " + group + " --topic " + in + " --to 0", false);
  ASSERT_EQ(reset.exit_code, 0) << reset.out << reset.err;
  ASSERT_EQ(committed_total(group, in), 0);

  auto after = produce_while_running(in, second, 2000, "0.1", 22, dir / "producer-2.log");
  host.start();
  EXPECT_TRUE(wait_for([&] { return count_of(read_file(host.log()), "up to which its output was committed") >= 4; },
                       std::chrono::seconds(60)))
      << host.log_tail();
  // Past the old position, with new input still arriving: the kill leaves a round open.
  EXPECT_TRUE(wait_for([&] { return committed_total(group, in) > first + second / 4; }, std::chrono::seconds(120)))
      << "committed " << committed_total(group, in) << "\n" << host.log_tail();
  kill_in_flight_and_finish(host, *after, dir / "producer-2.log", group, in, first + second);
  wait_output_settled(out);
  auto v = expect_dedupe_exactly_once(in, out, first + second);
  EXPECT_GT(out_before, 0);
  EXPECT_GT(json_number(v.out, "input"), json_number(v.out, "distinct_ids"));  // duplicates were dropped
}

}  // namespace
