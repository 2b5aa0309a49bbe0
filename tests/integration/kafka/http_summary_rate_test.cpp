// The summary's rate of a pipeline whose sink delivers after write() returns (the http
// sink's completion window): its active span ends at the commit that moved the last
// delivered records, not at the last round that read any. QA saw a kafka -> http
// pipeline's rate at 35,029 r/s, the speed of its read, while its server took 20
// requests a second.
#include <gtest/gtest.h>

#include <regex>

#include "http_test_server.hpp"
#include "kafka_env.hpp"

using namespace exactly::test;

TEST(HttpSummaryRate, TheRateIsTheDeliveryRateNotTheReadRate) {
  HttpTestServer srv;
  std::string in = unique_name("http-rate-in"), group = unique_name("http-rate-g");
  fs::path dir = temp_dir("http-summary-rate");
  kafka_tool("create-topic --topic " + in + " --partitions 1");
  kafka_tool("produce --topic " + in + " --count 200 --partitions 1 --dup-ratio 0 --seed 1");
  // 200 records read in a moment, delivered at 50 a second: about 4 s of delivery after
  // the last round that read any; then the source's idle end and the final drain.
  write_file(dir / "p.yaml", "pipelines:\n"
                             "  - name: to-http\n"
                             "    delivery: at_least_once\n"
                             "    commit: { interval: 100ms }\n"
                             "    source:\n      plugin: kafka\n      config:\n"
                             "        bootstrap.servers: " + kafka_bootstrap() + "\n"
                             "        group.id: " + group + "\n        topics: [" + in + "]\n"
                             "        stop.when.idle: 1s\n"
                             "    sink:\n      plugin: http\n      config:\n"
                             "        url: " + srv.base() + "/r/{/messageId}\n"
                             "        classes: { default: { rate: 50, burst: 1 } }\n");
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_EQ(srv.requests().size(), 200u) << r.err;

  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(\nto-http +\S+ +200 +200 .* ([0-9]+) r/s)"))) << r.out;
  const double rate = std::stod(m[1]);
  // 199 gaps of 1/50 s at the server; the read alone took milliseconds.
  EXPECT_LT(rate, 75) << r.out;
  EXPECT_GT(rate, 25) << r.out;
}
