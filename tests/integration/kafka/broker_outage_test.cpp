// The only broker down for longer than a group description used to wait (its own
// single-node KRaft broker, so that the test can take it away): an exactly_once kafka ->
// dedupe -> kafka host watches its group (fence.departed, on by default, and
// standby.replicas), and the watch's description of the group waits for the group
// coordinator. librdkafka (2.0.2 and since) aborts the process when such a request times
// out before the coordinator is back and the coordinator then returns; with a 10 s
// timeout every host did that once a broker came back from an outage of ~40 s or more
// (kafka_source_group_watch.cpp). The host must outlive the outage, take the input that
// follows it, and keep every id exactly once.
//
// And a kafka sink's changelog reader (the dedupe stage's restores) asked for a range while
// the broker is down, after a restore that left records fetched past its end in the
// reader's queue: the sink waited between attempts with rd_kafka_poll on that consumer,
// and 2.0.2 aborts when that meets a fetched record (rd_kafka_q_serve: res !=
// RD_KAFKA_OP_RES_PASS). A host of BrokerBounce's group died so "during state_open".
#include <gtest/gtest.h>

#include <csignal>
#include <future>
#include <thread>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "kafka_test_util.hpp"
#include "metrics_scrape.hpp"
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

// A commit that waits on the broker has not failed yet: /readyz said ready for the 10-30
// s until the sink gave up (QA r10). Past ready.commit.timeout the pipeline is not
// ready, its line saying how long the commit has run, and ready again once
// the broker is back. (A generator keeps records coming while the broker is away; the
// at_least_once sink's flush then holds the commit for up to a minute.)
TEST(BrokerOutage, ACommitHeldByTheOutageMakesThePipelineNotReadyBeforeItFails) {
  const std::string out = unique_name("held-out");
  kafka_tool("create-topic --topic " + out + " --partitions 1");
  const fs::path dir = temp_dir("held");
  write_file(dir / "host.yaml",
             "metrics: { listen: 127.0.0.1:0 }\n"
             "pipelines:\n"
             "  - name: held\n"
             "    commit.interval: 200ms\n"
             "    ready.commit.timeout: 3s\n"
             "    source: { plugin: generator, config: { count: 0, rate: 1000 } }\n"
             "    sink:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: \"" + kafka_bootstrap() + "\"\n        topic: " + out + "\n");
  Host host("held", dir / "host.yaml", dir / "host.log");
  host.start();
  auto ready_body = [&](std::chrono::seconds within, const std::string& want) {
    const auto until = std::chrono::steady_clock::now() + within;
    std::string body;
    while (std::chrono::steady_clock::now() < until) {
      const int port = metrics_port(read_file(host.log()));
      if (port != 0) {
        body = scrape(port, "/readyz");
        if (body.find(want) != std::string::npos) return body;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return body;
  };
  const std::string before = ready_body(std::chrono::seconds(60), "HTTP/1.1 200");
  ASSERT_EQ(before.rfind("HTTP/1.1 200", 0), 0u) << before << host.log_tail();

  ASSERT_TRUE(OwnCluster::node("stop-node", 1));
  const auto stopped = std::chrono::steady_clock::now();
  const std::string held = ready_body(std::chrono::seconds(40), "pipeline held: up, its commit has run ");
  const double after_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  ASSERT_TRUE(OwnCluster::node("start-node", 1));
  EXPECT_EQ(held.rfind("HTTP/1.1 503", 0), 0u) << held << host.log_tail(6000);
  EXPECT_NE(held.find("pipeline held: up, its commit has run "), std::string::npos)
      << "after " << after_s << " s of outage:\n" << held << host.log_tail(6000);
  EXPECT_NE(held.find("(more than ready.commit.timeout, 3 s)"), std::string::npos) << held;

  const std::string again = ready_body(std::chrono::seconds(120), "HTTP/1.1 200");
  EXPECT_EQ(again.rfind("HTTP/1.1 200", 0), 0u) << again << host.log_tail(6000);
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
}

TEST(BrokerOutage, AChangelogRangeAskedForWhileTheBrokerIsDownFailsRetriablyAfterARestore) {
  using exactly::testing::Library;
  using exactly::testing::SinkHarness;
  const std::string in = unique_name("clo-in"), out = unique_name("clo-out"), store = unique_name("clo-cl");
  kafka_tool("create-topic --topic " + in + " --partitions 1");
  kafka_tool("create-topic --topic " + out + " --partitions 1");
  Library lib(std::string(EXACTLY_PLUGIN_DIR) + "/exactly_kafka.so");
  SinkHarness sink(lib, "kafka",
                   {{"bootstrap.servers", kafka_bootstrap()}, {"topic", out},
                    {"delivery", "exactly_once"}, {"transactional.id", unique_name("clo-txn")},
                    {"open.timeout", "8000"}});
  ASSERT_TRUE(sink.ok()) << sink.create_status().message();
  ASSERT_TRUE(sink.open().is_ok());
  const exactly::sdk::Partition part{0, in + "-0", in, 0, -1};
  exactly::sdk::StateInfo info;
  auto st = sink.state_open(store, part, info);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_TRUE(info.created);

  // A restore that reads slowly at first while claims keep coming (written to the changelog
  // as a running pipeline's sink appends them): its reader reaches the
  // end (an empty fetch while the first record is being handled), then fetches the claims
  // written after that, which stay in its queue when the restore stops at that end.
  kt::produce(kafka_bootstrap(), store, 0, 1000, "claim", 0);
  long read = 0;
  st = sink.state_read(store, part, 0, [&](int64_t, ex_bytes, ex_bytes) {
    if (read++ == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      kt::produce(kafka_bootstrap(), store, 1000, 2000, "claim", 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    }
    return true;
  });
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(read, 1000) << "the restore was to stop at the end it first reached";
  std::printf("restore read %ld of the 2000 claims\n", read);
  std::fflush(stdout);

  // Down: the answer is a retriable error within the sink's open.timeout (8 s) and one
  // request's wait (5 s), not a wait for the broker's return, and not an abort.
  ASSERT_TRUE(OwnCluster::node("stop-node", 1));
  const auto asked = std::chrono::steady_clock::now();
  auto down = std::async(std::launch::async, [&] { return sink.state_open(store, part, info); });
  const bool answered = down.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  const auto took = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - asked);
  EXPECT_TRUE(answered) << "state_open gave no answer for 60 s while the broker was down";
  ASSERT_TRUE(OwnCluster::node("start-node", 1));
  st = down.get();  // (a call that waited for the broker returns now)
  if (answered) {
    EXPECT_EQ(st.code(), EX_ERR_RETRIABLE) << st.message();
    EXPECT_NE(st.message().find("cannot read the range of changelog " + store + " [0]"), std::string::npos)
        << st.message();
    std::printf("answered in %lld s: %s\n", static_cast<long long>(took.count()), st.message().c_str());
  }

  // Back: the same reader answers, with every claim.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  do {
    st = sink.state_open(store, part, info);
  } while (!st.is_ok() && std::chrono::steady_clock::now() < until);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(info.end, 2000);
}
