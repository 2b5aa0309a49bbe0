// kafka -> http through the real `exactly run` with the sink's completion window (ABI
// 1.4): one request the server holds for a long time does not hold the batches read
// after it (they reach the server while it is still open), and the group's committed
// offset stays at that record until it is answered, then moves to the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "hosts.hpp"
#include "http_test_server.hpp"
#include "kafka_env.hpp"

using namespace exactly::test;

namespace {

bool answered(const std::vector<SeenRequest>& seen, const std::string& slow_prefix) {
  for (auto& r : seen)
    if (r.path.rfind(slow_prefix, 0) == 0) return true;
  return false;
}

TEST(HttpSinkWindow, OneSlowRequestDoesNotHoldLaterBatchesAndTheOffsetWaitsForIt) {
  HttpTestServer srv;
  std::string in = unique_name("http-win-in"), group = unique_name("http-win-g");
  fs::path dir = temp_dir("http-window");
  kafka_tool("create-topic --topic " + in + " --partitions 1");
  // The record with seq 900 is held 60 s by the server; every other answers at once. (The
  // second produce below has seqs 0..799, so only the first one is ever held.)
  const std::string slow = "/hold/900/60000/900/";
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: to-http\n"
             "    delivery: at_least_once\n"
             "    commit: { interval: 200ms }\n"
             "    source:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: " + kafka_bootstrap() + "\n"
             "        group.id: " + group + "\n        topics: [" + in + "]\n"
             "    sink:\n      plugin: http\n      config:\n"
             "        url: " + srv.base() + "/hold/900/60000/{/seq}/{/messageId}\n"
             "        idempotency.key: /messageId\n"
             "        max.in.flight: 16\n"
             "        request.timeout: 180s\n");
  kafka_tool("produce --topic " + in + " --count 1000 --partitions 1 --dup-ratio 0 --seed 1");
  Host host("h", dir / "p.yaml", dir / "host.log");
  host.start();
  // The first 1000 records: all but the held one answered.
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline && srv.requests().size() < 999)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(srv.requests().size(), 999u) << host.log_tail();
  ASSERT_FALSE(answered(srv.requests(), slow)) << "the held request was answered early";

  // Later input, read in later batches while the held request is still open.
  kafka_tool("produce --topic " + in + " --count 800 --partitions 1 --dup-ratio 0 --seed 2");
  long long committed = -1, max_committed_while_open = -1;
  size_t seen_while_open = 0;
  for (;;) {
    auto seen = srv.requests();
    if (answered(seen, slow)) break;
    seen_while_open = seen.size();
    committed = committed_total(group, in);
    // Read again after the offset: the request was still open when it was committed.
    if (!answered(srv.requests(), slow)) max_committed_while_open = std::max(max_committed_while_open, committed);
    if (seen_while_open >= 1799 && committed == 900) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  // Without the window, write() waits for the held request: nothing of the second produce
  // reaches the server before it is answered.
  EXPECT_EQ(seen_while_open, 1799u) << "later batches waited behind the slow request";
  EXPECT_LE(max_committed_while_open, 900) << "the offset passed a record still in flight";
  EXPECT_EQ(committed, 900) << "the committed offset did not reach the open record";

  // Once answered, the offset moves to the end.
  deadline = Clock::now() + std::chrono::seconds(90);
  while (Clock::now() < deadline && committed_total(group, in) < 1800)
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(committed_total(group, in), 1800) << host.log_tail();
  EXPECT_TRUE(answered(srv.requests(), slow));
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
  std::set<std::string> keys;
  for (auto& r : srv.requests()) keys.insert(r.header("idempotency-key"));
  EXPECT_EQ(keys.size(), 1800u);
}

// A stop while write() waits for room in a full window, behind a class at 20/s: the host
// stops at once (exit 0) and commits what was delivered, no more. Held, the stop waited
// for the class past shutdown.timeout and exited 3 with nothing committed, so every
// delivered record went again at the next start (QA: 659 delivered, 0 committed).
TEST(HttpSinkWindow, AStopWhileAThrottledClassFillsTheWindowCommitsWhatWasDelivered) {
  HttpTestServer srv;
  std::string in = unique_name("http-stop-in"), group = unique_name("http-stop-g");
  fs::path dir = temp_dir("http-stop");
  kafka_tool("create-topic --topic " + in + " --partitions 2");
  kafka_tool("produce --topic " + in + " --count 20000 --partitions 2 --dup-ratio 0 --seed 3");
  write_file(dir / "p.yaml",
             "shutdown.timeout: 20s\n"
             "pipelines:\n"
             "  - name: throttled\n"
             "    delivery: at_least_once\n"
             "    source:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: " + kafka_bootstrap() + "\n"
             "        group.id: " + group + "\n        topics: [" + in + "]\n"
             "    sink:\n      plugin: http\n      config:\n"
             "        url: " + srv.base() + "/ok/{/messageId}\n"
             "        idempotency.key: /messageId\n"
             "        classes: { default: { rate: 20 } }\n");
  Host host("h", dir / "p.yaml", dir / "host.log");
  host.start();
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline && srv.requests().size() < 60)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(srv.requests().size(), 60u) << host.log_tail();
  EXPECT_EQ(host.stop(SIGTERM), 0) << "the stop waited for the throttled class:\n" << host.log_tail();
  std::set<std::string> delivered;
  for (auto& r : srv.requests()) delivered.insert(r.header("idempotency-key"));
  const long long committed = committed_total(group, in);
  // Every committed position was delivered (the window lowers them to the first open
  // record); those delivered past a still-open one go again, as at-least-once says.
  EXPECT_GE(committed, 50) << "what was delivered was not committed";
  EXPECT_LE(committed, static_cast<long long>(delivered.size()));
  EXPECT_LT(committed, 20000);
}

}  // namespace
