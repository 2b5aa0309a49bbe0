// A plugin's metric that Prometheus would refuse (a bad name, a bad or reserved label, a
// label string that is not k=v pairs) is dropped with one warning naming the stage: one
// such series made a scraper refuse the whole page, every other series with it.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "metrics_scrape.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {
const std::string kPluginPath = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

std::string stage(const std::string& name, const std::string& labels) {
  return "      - { plugin: metric, config: { name: \"" + name + "\", labels: \"" + labels + "\" } }\n";
}
}  // namespace

TEST(PluginMetricNames, SeriesAScraperWouldRefuseAreDroppedWithOneWarningAndTheRestStay) {
  auto dir = temp_dir("metric-names");
  write_file(dir / "p.yaml", "plugin.path: [" + kPluginPath + "]\n"
                             "metrics: { listen: 127.0.0.1:0 }\n"
                             "pipelines:\n  - name: m\n"
                             "    source: { plugin: counter, config: { count: 1000000000, batch.size: 10, "
                             "poll.pace.ms: 5 } }\n"
                             "    transforms:\n" +
                                 stage("good_total", "k=v") + stage("bad name total", "") + stage("", "") +
                                 stage("dup_total", "pipeline=evil") + stage("le_total", "le=3") +
                                 stage("half_total", "k=v,bad") + stage("odd_total", "1k=v") +
                             "    sink: { plugin: discard }\n");
  const fs::path log = dir / "log.txt";
  Child c({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, log);
  const std::string body = scrape_until(log, "exactly_good_total");
  c.kill(SIGTERM);
  EXPECT_EQ(c.wait(), 0) << read_file(log);
  EXPECT_NE(body.find("exactly_good_total{pipeline=\"m\",stage=\"transforms[0]/metric\",k=\"v\"}"),
            std::string::npos)
      << body;
  for (const char* bad : {"bad name", "exactly_{", "dup_total", "le_total", "half_total", "odd_total"})
    EXPECT_EQ(body.find(bad), std::string::npos) << bad << "\n" << body;
  const std::string text = read_file(log);
  EXPECT_NE(text.find("transforms[1]/metric: metric 'bad name total' dropped: not a Prometheus metric name"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("transforms[3]/metric: metric 'dup_total' dropped: label 'pipeline' given twice"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("transforms[4]/metric: metric 'le_total' dropped: label 'le' is reserved"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("transforms[5]/metric: metric 'half_total' dropped: labels 'k=v,bad' are not k=v pairs"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("transforms[6]/metric: metric 'odd_total' dropped: label name '1k'"), std::string::npos)
      << text;
  // Said once, not per batch.
  size_t n = 0;
  for (size_t at = text.find("metric 'dup_total' dropped"); at != std::string::npos;
       at = text.find("metric 'dup_total' dropped", at + 1))
    ++n;
  EXPECT_EQ(n, 1u) << text;
}

// Values: a gauge may be NaN or infinite, written as Prometheus reads them ("NaN", "+Inf":
// printf's "-nan" made the scraper refuse the whole page); a counter only goes up, so a
// negative or non-finite increment is dropped with one warning (a counter that went down
// reads as a reset to rate()).
TEST(PluginMetricNames, GaugeValuesAreWrittenAsPrometheusReadsThemAndCountersOnlyGoUp) {
  auto dir = temp_dir("metric-values");
  auto with = [](const std::string& name, const std::string& kind, const std::string& value) {
    return "      - { plugin: metric, config: { name: " + name + ", kind: " + kind + ", value: \"" + value + "\" } }\n";
  };
  write_file(dir / "p.yaml", "plugin.path: [" + kPluginPath + "]\n"
                             "metrics: { listen: 127.0.0.1:0 }\n"
                             "pipelines:\n  - name: m\n"
                             "    source: { plugin: counter, config: { count: 1000000000, batch.size: 10, "
                             "poll.pace.ms: 5 } }\n"
                             "    transforms:\n" +
                                 with("nan_gauge", "gauge", "-nan") + with("inf_gauge", "gauge", "inf") +
                                 with("neg_inf_gauge", "gauge", "-inf") + with("down_total", "counter", "-5") +
                                 with("nan_total", "counter", "nan") + with("up_total", "counter", "2") +
                             "    sink: { plugin: discard }\n");
  const fs::path log = dir / "log.txt";
  Child c({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, log);
  const std::string body = scrape_until(log, "exactly_up_total");
  c.kill(SIGTERM);
  EXPECT_EQ(c.wait(), 0) << read_file(log);
  auto value_of = [&](const std::string& name) {
    const size_t at = body.find("\nexactly_" + name + "{");
    if (at == std::string::npos) return std::string("(absent)");
    const size_t sp = body.find("} ", at);
    return body.substr(sp + 2, body.find('\n', sp) - sp - 2);
  };
  EXPECT_EQ(value_of("nan_gauge"), "NaN") << body;
  EXPECT_EQ(value_of("inf_gauge"), "+Inf") << body;
  EXPECT_EQ(value_of("neg_inf_gauge"), "-Inf") << body;
  EXPECT_EQ(value_of("down_total"), "(absent)") << body;
  EXPECT_EQ(value_of("nan_total"), "(absent)") << body;
  EXPECT_NE(value_of("up_total"), "(absent)") << body;
  EXPECT_EQ(body.find("nan\n"), std::string::npos) << body;
  const std::string text = read_file(log);
  EXPECT_NE(text.find("transforms[3]/metric: metric 'down_total' dropped: a counter's increment must be a finite "
                      "number >= 0, got -5"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("transforms[4]/metric: metric 'nan_total' dropped: a counter's increment must be"),
            std::string::npos)
      << text;
}
