// The only broker down for longer than a group description used to wait (its own
// single-node KRaft broker, so that the test can take it away): an exactly_once kafka ->
// dedupe -> kafka host watches its group (fence.departed, on by default, and
// standby.replicas), and the watch's description of the group waits for the group
// coordinator. librdkafka (2.0.2 and since) aborts the process when such a request times
// out before the coordinator is back and the coordinator then returns; with a 10 s
// timeout every host did that once a broker came back from an outage of ~40 s or more
// (kafka_source_group_watch.cpp). The host must outlive the outage, take the input that
// follows it, and keep every id exactly once.
#include <gtest/gtest.h>

#include <csignal>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "output_checks.hpp"
#include "own_cluster.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

const auto* const g_env = ::testing::AddGlobalTestEnvironment(new OwnCluster(1, "512m"));

}  // namespace

TEST(BrokerOutage, AHostWatchingItsGroupOutlivesItsOnlyBrokerBeingDownForAMinute) {
  const std::string in = unique_name("out-in"), out = unique_name("out-out"), group = unique_name("out-g");
  const fs::path dir = temp_dir("outage");
  create_in_out_topics(in, out);
  write_file(dir / "host.yaml", dedupe_host_yaml("outage", in, out, group, dir / "state",
                                                "        standby.replicas: 1\n"));
  Host host("host", dir / "host.yaml", dir / "host.log");
  host.start();
  auto produce = [&](int seed) {
    kafka_tool("produce --topic " + in + " --count 20000 --partitions 4 --keyed --dup-ratio 0.1 "
               "--dup-variant --size 150 --seed " + std::to_string(seed));
  };
  produce(31);
  ASSERT_TRUE(wait_committed(group, in, 20000, std::chrono::seconds(120))) << host.log_tail();

  // Down for 60 s: the watch re-describes the group every 30 s, and the old 10 s timeout
  // then ran out while the coordinator was away.
  ASSERT_TRUE(OwnCluster::node("stop-node", 1));
  std::printf("broker stopped; the host runs on without it for 60 s\n");
  for (int s = 0; s < 60; ++s) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    int code = 0;
    ASSERT_FALSE(host.exited_by_itself(&code)) << "the host died while the broker was down (" << code
                                               << ")\n" << host.log_tail(6000);
  }
  ASSERT_TRUE(OwnCluster::node("start-node", 1));
  std::printf("broker back\n");
  produce(32);
  const bool caught_up = wait_committed(group, in, 40000, std::chrono::seconds(180));
  int code = 0;
  ASSERT_FALSE(host.exited_by_itself(&code)) << "the host died after the broker came back (" << code
                                             << ")\n" << host.log_tail(6000);
  EXPECT_TRUE(caught_up) << "committed " << committed_total(group, in) << " of 40000\n" << host.log_tail(6000);
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
  EXPECT_EQ(count_of(read_file(host.log()), "---- test: host: start #"), 1) << "the host was restarted";
  wait_output_settled(out);
  auto v = expect_dedupe_exactly_once(in, out, 40000);
  EXPECT_LT(answer(v, "distinct_ids"), answer(v, "input"));
  expect_markers_visible(out);
}
