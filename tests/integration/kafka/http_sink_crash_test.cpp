// kafka -> http through the real `exactly run`, at_least_once, the host SIGKILLed again
// and again while input is still being produced. The test server records every request:
// every input record's idempotency key must reach it at least once, and the set it saw
// (deduplicated by key, as the downstream would) must equal the input exactly.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "hosts.hpp"
#include "http_test_server.hpp"
#include "kafka_env.hpp"

using namespace exactly::test;

namespace {

TEST(HttpSinkCrash, AtLeastOnceThroughKillsEveryKeyArrivesNothingExtra) {
  const long long n = 20000;
  const int kills = 6;
  HttpTestServer srv;
  std::string in = unique_name("http-in"), group = unique_name("http-g");
  fs::path dir = temp_dir("http-crash");
  kafka_tool("create-topic --topic " + in + " --partitions 4");
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: to-http\n"
             "    delivery: at_least_once\n"
             "    commit: { interval: 300ms, max.records: 5000 }\n"
             "    restart: { backoff.initial: 200ms, backoff.max: 2s }\n"
             "    source:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: " + kafka_bootstrap() + "\n"
             "        group.id: " + group + "\n        topics: [" + in + "]\n"
             "        rdkafka: { session.timeout.ms: 6000, group.instance.id: http-crash }\n"
             "    sink:\n      plugin: http\n      config:\n"
             "        url: " + srv.base() + "/orders/{/seq}\n"
             "        idempotency.key: /messageId\n"
             "        max.in.flight: 32\n"
             "        retry.backoff.initial: 20\n");
  // Paced to outlast the kills: a host killed after its input is complete proves nothing.
  Child producer({tools_dir() + "/kafka-tool.sh", "produce", "--topic", in, "--count",
                  std::to_string(n), "--partitions", "4", "--dup-ratio", "0", "--seed", "17",
                  "--rate", std::to_string(n / (kills * 5 + 10)), "--bootstrap", kafka_bootstrap()},
                 dir / "producer.log");
  Host host("h", dir / "p.yaml", dir / "host.log");
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> delay_ms(1500, 4500);
  for (int k = 0; k < kills; ++k) {
    host.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    int code = 0;
    EXPECT_FALSE(producer.exited(&code)) << "kill " << k + 1 << " came after the input was complete";
    EXPECT_EQ(host.stop(SIGKILL), -SIGKILL) << "the host exited before it could be killed"
                                             << host.log_tail();
  }
  EXPECT_EQ(producer.wait(), 0) << read_file(dir / "producer.log");
  host.start();
  auto deadline = Clock::now() + std::chrono::seconds(90);
  std::set<std::string> keys;
  std::vector<SeenRequest> seen;
  while (Clock::now() < deadline) {
    seen = srv.requests();
    keys.clear();
    for (auto& r : seen) keys.insert(r.header("idempotency-key"));
    if (static_cast<long long>(keys.size()) >= n) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();

  // The input with --dup-ratio 0: n distinct messageIds, seq 0..n-1, one seq per id.
  std::map<std::string, std::string> seq_of_key;
  std::set<long long> seqs;
  size_t conflicts = 0;
  for (auto& r : seen) {
    std::string key = r.header("idempotency-key"), seq = r.path.substr(std::string("/orders/").size());
    auto [it, fresh] = seq_of_key.emplace(key, seq);
    if (!fresh && it->second != seq) ++conflicts;
    seqs.insert(std::stoll(seq));
  }
  EXPECT_EQ(static_cast<long long>(seq_of_key.size()), n) << "distinct keys at the server";
  EXPECT_EQ(static_cast<long long>(seqs.size()), n);
  EXPECT_EQ(seqs.empty() ? -1 : *seqs.begin(), 0);
  EXPECT_EQ(seqs.empty() ? -1 : *seqs.rbegin(), n - 1) << "a key the input does not have";
  EXPECT_EQ(conflicts, 0u) << "one key sent with two different records";
  EXPECT_EQ(host.starts(), kills + 1);
  std::cout << "requests " << seen.size() << " for " << n << " records (repeats "
            << static_cast<long long>(seen.size()) - n << ")\n";
}

}  // namespace
