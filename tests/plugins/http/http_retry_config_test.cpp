// The retry topic's and reroute's settings are checked where every other setting is: the
// plugin's validate (ABI 1.3) and create name the key, and `exactly validate` names the
// file and line. No broker is needed: nothing connects before open().
#include <gtest/gtest.h>

#include "http_sink_fixture.hpp"

using namespace exactly::test;
using namespace http_test;

namespace {

TEST(HttpRetryConfig, RerouteWithoutARetryTopicAndBadRetrySettingsNameTheirKey) {
  HttpTestServer srv;
  const std::vector<std::pair<Pairs, std::string>> cases = {
      {{{"classes.cash.when.fused", "reroute"}}, "classes.cash.when.fused"},
      {{{"classes.slow.when.limited", "reroute"}}, "classes.slow.when.limited"},
      {{{"when.limited", "reroute"}}, "when.limited"},
      {{{"when.fused", "reroute"}}, "when.fused"},
      {{{"classes.cash.when.fused", "wait"}}, "classes.cash.when.fused"},
      {{{"classes.cash.when.limited", "reject"}}, "classes.cash.when.limited"},
      {{{"retry.topic", "r"}}, "retry.topic.bootstrap.servers"},
      {{{"retry.topic", "r"}, {"retry.topic.bootstrap.servers", "127.0.0.1:1"}, {"retry.topic.max", "-1"}},
       "retry.topic.max"},
      {{{"retry.topic", "r"}, {"retry.topic.bootstrap.servers", "127.0.0.1:1"},
        {"retry.topic.rdkafka.no.such.property", "1"}},
       "retry.topic.rdkafka.no.such.property"},
      {{{"retry.topic", "r"}, {"retry.topic.bootstrap.servers", "127.0.0.1:1"},
        {"retry.topic.rdkafka.enable.idempotence", "false"}},
       "retry.topic.rdkafka.enable.idempotence"},
      {{{"retry.topic.rdkafka.linger.ms", "5"}}, "retry.topic.rdkafka"},
      // Out of range before the retry topic is on, too (QA: accepted until it was set).
      {{{"retry.topic.max", "5000"}}, "retry.topic.max"},
      {{{"retry.topic.backoff.initial", "5000"}, {"retry.topic.backoff.max", "1000"}}, "retry.topic.backoff.max"},
  };
  for (const auto& [extra, key] : cases) {
    auto st = exactly::testing::validate(lib(), EX_KIND_SINK, "http", job_config(srv, extra));
    EXPECT_EQ(st.code(), EX_ERR_CONFIG) << key << ": " << st.message();
    EXPECT_EQ(st.key(), key) << st.message();
    SinkHarness s(lib(), "http", job_config(srv, extra));
    EXPECT_FALSE(s.ok()) << key;
    EXPECT_EQ(s.create_status().key(), key);
  }
  // The inline retries' backoff is checked as the retry topic's (QA: accepted inverted).
  // (job_config sets its own backoff first, which would win.)
  Pairs inverted = {{"url", srv.base() + "/ok"}, {"retry.backoff.initial", "5000"}, {"retry.backoff.max", "1000"}};
  auto inv = exactly::testing::validate(lib(), EX_KIND_SINK, "http", inverted);
  EXPECT_EQ(inv.code(), EX_ERR_CONFIG) << inv.message();
  EXPECT_EQ(inv.key(), "retry.backoff.max") << inv.message();
  // With the retry topic set, reroute is accepted (validate does not connect).
  Pairs good = {{"retry.topic", "r"}, {"retry.topic.bootstrap.servers", "127.0.0.1:1"},
                {"classes.cash.when.fused", "reroute"}, {"when.limited", "reroute"}};
  auto st = exactly::testing::validate(lib(), EX_KIND_SINK, "http", job_config(srv, good));
  EXPECT_TRUE(st.is_ok()) << st.message();
}

TEST(HttpRetryConfig, ExactlyValidateNamesTheFileLineAndKeyOfARerouteWithoutRetryTopic) {
  fs::path dir = temp_dir("http-retry-validate");
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: p\n"
             "    delivery: at_least_once\n"
             "    source: { plugin: generator, config: { count: 5 } }\n"
             "    sink:\n      plugin: http\n      config:\n"
             "        url: http://127.0.0.1:1/x/{/seq}\n"
             "        classes:\n"
             "          cash: { when.fused: reroute }\n");
  auto r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_NE(r.exit_code, 0);
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("p.yaml:10"), std::string::npos) << all;
  EXPECT_NE(all.find("classes.cash.when.fused"), std::string::npos) << all;
  EXPECT_NE(all.find("set retry.topic"), std::string::npos) << all;
}

}  // namespace
