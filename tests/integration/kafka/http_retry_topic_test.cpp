// The http sink's retry topic and `reroute` outcomes through the real `exactly run`, a real
// broker and the real HTTP test server (tests/tools/http-test-server.py): a record whose
// requests keep failing goes to the retry topic with a retry count and a not-before time,
// a second pipeline (kafka source with not.before.header -> http) sends it again only once
// that time has come, and after retry.topic.max re-enqueues it reaches the dead-letter
// topic. A fused class with `reroute` sends nothing and goes to the retry topic while the
// other classes are delivered; a class over its rate reroutes what it cannot send soon.
// Times are compared with the records' own not-before headers (server clock vs. the
// sink's clock, both this machine's), never with a guess of how long something takes.
#include <gtest/gtest.h>

#include <exactly/testing/harness.hpp>

#include <map>
#include <set>

#include "hosts.hpp"
#include "http_test_server.hpp"
#include "kafka_env.hpp"
#include "kafka_test_util.hpp"

using namespace exactly::test;

namespace {

struct Topics {
  std::string in, retry, dlq;
  explicit Topics(const std::string& tag)
      : in(unique_name(tag + "-in")), retry(unique_name(tag + "-retry")), dlq(unique_name(tag + "-dlq")) {
    for (const auto& t : {in, retry, dlq}) kafka_tool("create-topic --topic " + t + " --partitions 1");
  }
};

// One pipeline: kafka `source_topic` -> http, records it cannot deliver to the dead-letter
// topic; `source_extra` / `sink_extra` are more config lines (8 spaces in).
std::string pipeline(const std::string& name, const Topics& t, const std::string& source_topic,
                     const fs::path& dir, const std::string& url, const std::string& source_extra,
                     const std::string& sink_extra) {
  const std::string b = kafka_bootstrap();
  return "  - name: " + name + "\n"
         "    delivery: at_least_once\n"
         "    commit: { interval: 200ms }\n"
         "    errors:\n      policy: dead-letter\n      dead-letter:\n        plugin: kafka\n"
         "        config: { bootstrap.servers: " + b + ", topic: " + t.dlq + ", state.dir: " +
         (dir / ("dlq-" + name)).string() + " }\n"
         "    source:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: " + b + "\n"
         "        group.id: " + name + "-" + t.in + "\n"
         "        topics: [" + source_topic + "]\n" + source_extra +
         "    sink:\n      plugin: http\n      config:\n"
         "        url: " + url + "\n"
         "        idempotency.key: /id\n"
         "        retry.topic: " + t.retry + "\n"
         "        retry.topic.bootstrap.servers: " + b + "\n" + sink_extra;
}

std::vector<kt::Msg> read_all(const std::string& topic, size_t at_least, int64_t deadline_ms = 5000) {
  return kt::read_topic(kafka_bootstrap(), topic, false, at_least, deadline_ms);
}

// Polls `topic` until it holds at least `n` records (or 60 s passed).
std::vector<kt::Msg> wait_for(const std::string& topic, size_t n) {
  std::vector<kt::Msg> got;
  auto end = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < end) {
    got = read_all(topic, n, 3000);
    if (got.size() >= n) break;
  }
  return got;
}

std::string id_of(const std::string& json) {
  auto p = json.find("\"id\":\"");
  if (p == std::string::npos) return "";
  auto q = json.find('"', p + 6);
  return json.substr(p + 6, q - p - 6);
}

kt::Out json_record(const std::string& id, const std::string& cls = "") {
  kt::Out o;
  o.key = id;
  o.value = "{\"id\":\"" + id + "\"" + (cls.empty() ? "" : ",\"cls\":\"" + cls + "\"") + "}";
  return o;
}

}  // namespace

TEST(HttpRetryTopic, FailingRecordsWaitTheirNotBeforeInTheRetryTopicThenGoToTheDeadLetterTopic) {
  HttpTestServer srv;
  Topics t("rt-fail");
  fs::path dir = temp_dir("http-rt-fail");
  const std::string url = srv.base() + "/always/503/{/id}";
  const std::string sink_extra =
      "        retry.max: 1\n        retry.backoff.initial: 10\n"
      "        retry.topic.max: 2\n        retry.topic.backoff.initial: 1500\n"
      "        retry.topic.backoff.max: 1500\n";
  write_file(dir / "p.yaml",
             "pipelines:\n" + pipeline("main", t, t.in, dir, url, "", sink_extra) +
                 pipeline("later", t, t.retry, dir, url,
                          "        not.before.header: exactly.not-before\n", sink_extra));
  std::vector<kt::Out> in;
  const std::vector<std::string> ids = {"f0", "f1", "f2", "f3", "f4"};
  for (const auto& id : ids) in.push_back(json_record(id));
  kt::produce_records(kafka_bootstrap(), t.in, in);

  Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "host.log");
  auto dead = wait_for(t.dlq, ids.size());
  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0) << tail_of(read_file(dir / "host.log"), 3000);
  ASSERT_EQ(dead.size(), ids.size()) << tail_of(read_file(dir / "host.log"), 3000);

  // The dead-letter topic: each record once, with the status and the re-enqueues.
  std::set<std::string> dead_ids;
  for (const auto& m : dead) {
    dead_ids.insert(id_of(m.value));
    std::string why = kt::header_of(m, "exactly.error");
    EXPECT_NE(why.find("http 503"), std::string::npos) << why;
    EXPECT_NE(why.find("re-enqueued 2 time(s)"), std::string::npos) << why;
  }
  EXPECT_EQ(dead_ids, std::set<std::string>(ids.begin(), ids.end()));

  // The retry topic: each record with count 1, then count 2, never 3; same key and value.
  auto requeued = read_all(t.retry, 2 * ids.size());
  std::map<std::string, std::set<std::string>> counts;
  for (const auto& m : requeued) {
    const std::string id = id_of(m.value);
    EXPECT_EQ(m.key.value_or(""), id);
    counts[id].insert(kt::header_of(m, "exactly.retry.count"));
    EXPECT_NE(kt::header_of(m, "exactly.retry.reason").find("http 503"), std::string::npos);
    EXPECT_GT(std::stoll(kt::header_of(m, "exactly.not-before")), m.timestamp)
        << "not-before is after the time it was re-enqueued";
  }
  for (const auto& id : ids) EXPECT_EQ(counts[id], (std::set<std::string>{"1", "2"})) << id;

  // At the server: the first attempts carry no count; every attempt of a re-enqueued
  // record arrived after the not-before time it carried, and after the earlier tries.
  std::map<std::string, std::map<std::string, std::vector<const SeenRequest*>>> by;
  auto seen = srv.requests();
  for (const auto& r : seen) by[r.path.substr(std::string("/always/503/").size())][r.header("exactly.retry.count")].push_back(&r);
  for (const auto& id : ids) {
    auto& tries = by[id];
    EXPECT_EQ(tries.size(), 3u) << id << ": attempts without a count, with 1 and with 2";
    EXPECT_GE(tries[""].size(), 2u) << id << ": first attempt + retry.max 1";
    double last_of_before = 0;
    for (const char* c : {"", "1", "2"}) {
      double first = 1e300, last = 0;
      for (const SeenRequest* r : tries[c]) {
        first = std::min(first, r->t);
        last = std::max(last, r->t);
        if (*c == '\0') continue;
        EXPECT_GE(r->t * 1000.0, std::stod(r->header("exactly.not-before")))
            << id << " count " << c << ": sent before its not-before time";
      }
      EXPECT_GT(first, last_of_before) << id << " count " << c << " came before the earlier tries";
      last_of_before = last;
    }
  }
}

// A downstream that answers with an HTML error page of several lines: the reason the
// sink writes with the record into the retry topic is one line, so the retry pipeline's
// http sink can send the record again (a header with a line break is refused by every
// HTTP client: every re-enqueued record went to the dead-letter topic after one pass).
TEST(HttpRetryTopic, AMultiLineErrorPageDoesNotStopTheRetryPipelineFromSendingAgain) {
  HttpTestServer srv;
  Topics t("rt-page");
  fs::path dir = temp_dir("http-rt-page");
  // Each record: two attempts answered 503 with the page, the third 200.
  const std::string url = srv.base() + "/failpage/2/503/{/id}";
  const std::string sink_extra =
      "        retry.max: 0\n"
      "        retry.topic.max: 3\n        retry.topic.backoff.initial: 200\n"
      "        retry.topic.backoff.max: 200\n";
  write_file(dir / "p.yaml",
             "pipelines:\n" + pipeline("main", t, t.in, dir, url, "", sink_extra) +
                 pipeline("later", t, t.retry, dir, url,
                          "        not.before.header: exactly.not-before\n", sink_extra));
  const std::vector<std::string> ids = {"p0", "p1", "p2"};
  std::vector<kt::Out> in;
  for (const auto& id : ids) in.push_back(json_record(id));
  kt::produce_records(kafka_bootstrap(), t.in, in);

  Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "host.log");
  // Delivered: a 200 for every id at the server.
  std::set<std::string> delivered;
  auto end = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < end && delivered.size() < ids.size()) {
    for (const auto& r : srv.requests())
      if (r.status == 200) delivered.insert(r.path.substr(r.path.rfind('/') + 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0) << tail_of(read_file(dir / "host.log"), 3000);
  EXPECT_EQ(delivered, std::set<std::string>(ids.begin(), ids.end())) << tail_of(read_file(dir / "host.log"), 3000);
  EXPECT_TRUE(read_all(t.dlq, 1, 2000).empty()) << "a record reached the dead-letter topic";
  // The reason in the retry topic: one line, quoting the page.
  auto requeued = read_all(t.retry, 2 * ids.size());
  ASSERT_GE(requeued.size(), 2 * ids.size());
  for (const auto& m : requeued) {
    const std::string why = kt::header_of(m, "exactly.retry.reason");
    EXPECT_NE(why.find("http 503"), std::string::npos) << why;
    EXPECT_NE(why.find("<body>busy come back later</body>"), std::string::npos) << why;
    EXPECT_EQ(why.find_first_of("\r\n\t"), std::string::npos) << why;
  }
  // The API never sees that reason, only the count and the not-before time.
  for (const auto& r : srv.requests()) {
    EXPECT_EQ(r.header("exactly.retry.reason"), "") << r.path;
    if (r.status == 200) EXPECT_EQ(r.header("exactly.retry.count"), "2") << r.path;
  }
}

TEST(HttpRetryTopic, AFusedClassWithRerouteSendsNothingAndASlowClassReroutesWhatWouldWait) {
  HttpTestServer srv;
  Topics t("rt-route");
  fs::path dir = temp_dir("http-rt-route");
  auto yaml = [&](const std::string& cash_when_fused) {
    return "pipelines:\n" +
           pipeline("main", t, t.in, dir, srv.base() + "/ok/{/cls}/{/id}", "",
                    "        class.field: /cls\n"
                    "        reroute.wait.max: 300ms\n"
                    "        classes:\n"
                    "          cash: { open: true, when.fused: " + cash_when_fused + " }\n"
                    "          slow: { rate: 1, burst: 1, when.limited: reroute }\n");
  };
  write_file(dir / "p.yaml", yaml("reroute"));
  std::vector<kt::Out> in;
  for (int i = 0; i < 10; ++i) {
    in.push_back(json_record("c" + std::to_string(i), "cash"));
    in.push_back(json_record("p" + std::to_string(i), "points"));
    in.push_back(json_record("s" + std::to_string(i), "slow"));
  }
  kt::produce_records(kafka_bootstrap(), t.in, in);

  Child host({exactly_bin(), "run", (dir / "p.yaml").string()}, dir / "host.log");
  // 10 cash + the slow ones that would have waited more than 300 ms (at least 5 of 10).
  auto requeued = wait_for(t.retry, 15);
  std::set<std::string> points;
  for (int i = 0; i < 100 && points.size() < 10; ++i) {
    points.clear();
    for (const auto& r : srv.requests())
      if (r.path.rfind("/ok/points/", 0) == 0 && r.status == 200) points.insert(r.path);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(points.size(), 10u) << "the class 'points' kept being delivered";

  std::set<std::string> cash, slow_requeued;
  std::vector<int64_t> slow_not_before;
  for (const auto& m : requeued) {
    const std::string id = id_of(m.value);
    EXPECT_EQ(kt::header_of(m, "exactly.retry.count"), "0") << "a reroute is not a failed try";
    const std::string reason = kt::header_of(m, "exactly.retry.reason");
    if (id[0] == 'c') {
      cash.insert(id);
      EXPECT_NE(reason.find("fuse open for class 'cash'"), std::string::npos) << reason;
      // A fuse opened by hand is looked at again after fuse.cooldown (10 s).
      EXPECT_GT(std::stoll(kt::header_of(m, "exactly.not-before")), m.timestamp);
    } else {
      ASSERT_EQ(id[0], 's') << id;
      slow_requeued.insert(id);
      EXPECT_NE(reason.find("over its rate"), std::string::npos) << reason;
      slow_not_before.push_back(std::stoll(kt::header_of(m, "exactly.not-before")));
    }
  }
  EXPECT_EQ(cash.size(), 10u);
  EXPECT_GE(slow_requeued.size(), 5u);
  EXPECT_EQ(std::set<int64_t>(slow_not_before.begin(), slow_not_before.end()).size(),
            slow_not_before.size())
      << "rerouted records of a limited class come back spread at its rate, not together";

  // Live edit: the same class now rejects; its new records go to the dead-letter topic.
  write_file(dir / "p.yaml", yaml("reject"));
  bool applied = false;
  for (int i = 0; i < 100 && !applied; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    applied = read_file(dir / "host.log").find("reconfigured=main") != std::string::npos;
  }
  ASSERT_TRUE(applied) << tail_of(read_file(dir / "host.log"), 3000);
  kt::produce_records(kafka_bootstrap(), t.in,
                      {json_record("c10", "cash"), json_record("c11", "cash"), json_record("c12", "cash")});
  auto dead = wait_for(t.dlq, 3);
  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0);
  std::string log = read_file(dir / "host.log");
  EXPECT_NE(log.find("rate classes reconfigured in place"), std::string::npos) << tail_of(log, 3000);
  EXPECT_EQ(log.find("restarted=main"), std::string::npos) << tail_of(log, 3000);
  std::set<std::string> dead_ids;
  for (const auto& m : dead) dead_ids.insert(id_of(m.value));
  EXPECT_EQ(dead_ids, (std::set<std::string>{"c10", "c11", "c12"}));
  size_t cash_at_server = 0, slow_at_server = 0;
  std::set<std::string> slow_sent;
  for (const auto& r : srv.requests()) {
    cash_at_server += r.path.rfind("/ok/cash/", 0) == 0;
    if (r.path.rfind("/ok/slow/", 0) == 0) slow_sent.insert(r.path.substr(9));
    slow_at_server += r.path.rfind("/ok/slow/", 0) == 0;
  }
  EXPECT_EQ(cash_at_server, 0u) << "a fused class sent requests";
  for (const auto& id : slow_requeued) EXPECT_EQ(slow_sent.count(id), 0u) << id << " sent and rerouted";
  EXPECT_EQ(slow_sent.size() + slow_requeued.size(), 10u) << "every slow record sent or rerouted";
  EXPECT_EQ(slow_at_server, slow_sent.size()) << "a slow record sent twice without a failure";
}

// The round's guarantee, through the .so: prepare_commit returns only once the retry topic
// holds every record re-enqueued in the round. linger.ms 3 s keeps the producer from
// sending on its own, so a prepare_commit that did not flush returns with nothing there.
TEST(HttpRetryTopic, PrepareCommitReturnsOnlyOnceTheRetryTopicHoldsTheRound) {
  HttpTestServer srv;
  Topics t("rt-flush");
  exactly::testing::Library lib(std::string(EXACTLY_PLUGIN_DIR) + "/exactly_http.so");
  exactly::testing::SinkHarness sink(
      lib, "http",
      {{"url", srv.base() + "/always/503/{/id}"}, {"idempotency.key", "/id"}, {"retry.max", "0"},
       {"retry.topic", t.retry}, {"retry.topic.bootstrap.servers", kafka_bootstrap()},
       {"retry.topic.rdkafka.linger.ms", "3000"}});
  ASSERT_TRUE(sink.ok()) << sink.create_status().message();
  ASSERT_TRUE(sink.open().is_ok());
  std::vector<exactly::testing::OwnedRecord> batch;
  for (const char* id : {"x1", "x2", "x3"})
    batch.push_back(exactly::testing::rec(std::string(id), std::string("{\"id\":\"") + id + "\"}"));
  EXPECT_TRUE(sink.write(batch).empty()) << "re-enqueued, not record errors";
  ASSERT_TRUE(sink.prepare_commit().is_ok());
  EXPECT_EQ(read_all(t.retry, 3, 1000).size(), 3u)
      << "prepare_commit returned before the retry topic had the round's records";
  EXPECT_EQ(sink.host().metric("http_sink_requeued_total{class=default,reason=failed}"), 3);
  EXPECT_EQ(sink.host().metric("http_sink_failures_total{class=default}"), 0)
      << "re-enqueued records did not fail for good";
}
