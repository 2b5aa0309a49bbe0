// The http sink with a retry topic through the real `exactly run`, SIGKILLed again and
// again while input arrives and a third of the requests fail for good (503): nothing is
// lost. Each record the server accepts reaches it; each one it always refuses goes to the
// retry topic (acknowledged before its round commits), comes back through a second
// pipeline after its not-before time, and then reaches the dead-letter topic. Read back
// with librdkafka directly (not the plugin) and from the server's own request log.
#include <atomic>
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <thread>

#include "hosts.hpp"
#include "http_test_server.hpp"
#include "kafka_env.hpp"
#include "kafka_test_util.hpp"

using namespace exactly::test;

namespace {

std::string id_of(const std::string& json) {
  auto p = json.find("\"id\":\"");
  if (p == std::string::npos) return "";
  auto q = json.find('"', p + 6);
  return json.substr(p + 6, q - p - 6);
}

std::string pipeline(const std::string& name, const std::string& source_topic,
                     const std::string& extra_source, const std::string& retry,
                     const std::string& dlq, const std::string& url, const fs::path& dir) {
  const std::string b = kafka_bootstrap();
  return "  - name: " + name + "\n"
         "    delivery: at_least_once\n"
         "    commit: { interval: 300ms }\n"
         "    restart: { backoff.initial: 200ms, backoff.max: 2s }\n"
         "    errors:\n      policy: dead-letter\n      dead-letter:\n        plugin: kafka\n"
         "        config: { bootstrap.servers: " + b + ", topic: " + dlq + ", state.dir: " +
         (dir / ("dlq-" + name)).string() + " }\n"
         "    source:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: " + b + "\n"
         "        group.id: " + name + "-" + source_topic + "\n"
         "        topics: [" + source_topic + "]\n" + extra_source +
         "    sink:\n      plugin: http\n      config:\n"
         "        url: " + url + "\n"
         "        idempotency.key: /id\n"
         "        max.in.flight: 16\n"
         "        retry.max: 1\n        retry.backoff.initial: 10\n"
         "        retry.topic: " + retry + "\n"
         "        retry.topic.bootstrap.servers: " + b + "\n"
         "        retry.topic.max: 1\n"
         "        retry.topic.backoff.initial: 200ms\n        retry.topic.backoff.max: 200ms\n";
}

}  // namespace

TEST(HttpRetryTopicCrash, KillsWhileRequestsFailLoseNothing) {
  const int n = 1500, kills = 3;
  HttpTestServer srv;
  const std::string in = unique_name("rtc-in"), retry = unique_name("rtc-retry"),
                    dlq = unique_name("rtc-dlq");
  kafka_tool("create-topic --topic " + in + " --partitions 2");
  kafka_tool("create-topic --topic " + retry + " --partitions 2");
  kafka_tool("create-topic --topic " + dlq + " --partitions 1");
  fs::path dir = temp_dir("http-rt-crash");
  const std::string url = srv.base() + "/{/a}/{/b}/{/id}";
  write_file(dir / "p.yaml",
             "pipelines:\n" + pipeline("main", in, "", retry, dlq, url, dir) +
                 pipeline("later", retry, "        not.before.header: exactly.not-before\n", retry,
                          dlq, url, dir));
  // Every third record is refused for good (/always/503/...), the others accepted.
  std::set<std::string> ok_ids, failing_ids;
  std::vector<kt::Out> records;
  for (int i = 0; i < n; ++i) {
    kt::Out o;
    o.partition = i % 2;
    o.key = "r" + std::to_string(i);
    const bool fails = i % 3 == 0;
    o.value = "{\"id\":\"" + o.key + "\",\"a\":\"" + (fails ? "always" : "ok") + "\",\"b\":\"" +
              (fails ? "503" : "x") + "\"}";
    (fails ? failing_ids : ok_ids).insert(o.key);
    records.push_back(std::move(o));
  }
  // Paced over ~10 s, so that the kills come while input still arrives.
  std::atomic<bool> producing{true};
  std::thread producer([&] {
    for (size_t from = 0; from < records.size(); from += 50) {
      std::vector<kt::Out> chunk(records.begin() + static_cast<long>(from),
                                 records.begin() + static_cast<long>(std::min(records.size(), from + 50)));
      kt::produce_records(kafka_bootstrap(), in, chunk);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    producing = false;
  });
  Host host("h", dir / "p.yaml", dir / "host.log");
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> delay_ms(1500, 3000);
  for (int k = 0; k < kills; ++k) {
    host.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    // A kill after the last input was produced would only test a restart.
    EXPECT_TRUE(producing.load()) << "kill " << k + 1 << " came after all input was produced";
    EXPECT_EQ(host.stop(SIGKILL), -SIGKILL) << "the host exited before it was killed" << host.log_tail();
  }
  producer.join();
  host.start();

  std::set<std::string> delivered, dead, requeued;
  auto deadline = Clock::now() + std::chrono::seconds(90);
  while (Clock::now() < deadline) {
    delivered.clear();
    for (const auto& r : srv.requests())
      if (r.status == 200) delivered.insert(r.header("idempotency-key"));
    dead.clear();
    for (const auto& m : kt::read_topic(kafka_bootstrap(), dlq, false, 0, 5000)) dead.insert(id_of(m.value));
    if (delivered.size() >= ok_ids.size() && dead.size() >= failing_ids.size()) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
  for (const auto& m : kt::read_topic(kafka_bootstrap(), retry, false, 0, 5000))
    requeued.insert(id_of(m.value));

  size_t lost = 0;
  for (const auto& id : ok_ids) lost += delivered.count(id) == 0;
  for (const auto& id : failing_ids) lost += dead.count(id) == 0;
  EXPECT_EQ(lost, 0u) << "records neither delivered nor dead-lettered";
  std::set<std::string> all_ids(ok_ids);
  all_ids.insert(failing_ids.begin(), failing_ids.end());
  for (const auto& id : dead) EXPECT_EQ(failing_ids.count(id), 1u) << id << " dead-lettered but accepted";
  for (const auto& id : delivered) EXPECT_EQ(ok_ids.count(id), 1u) << id << " accepted but always refused";
  for (const auto& id : failing_ids) EXPECT_EQ(requeued.count(id), 1u) << id << " never re-enqueued";
  EXPECT_EQ(host.starts(), kills + 1);
}
