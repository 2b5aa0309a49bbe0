// A partition revoked from this host takes its gauges with it: a gauge nobody sets any
// more (a dedupe store's key count, a consumer's lag) would otherwise report a partition
// this host no longer owns, for as long as the host runs.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "metrics_scrape.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {
const std::string kPluginPath = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

// Waits (10 s at most) until the host's log names its metrics port and says `said`;
// returns the port (0: never named).
int wait_for_port_and(const fs::path& log, const std::string& said) {
  for (int i = 0; i < 200 && (metrics_port(read_file(log)) == 0 || read_file(log).find(said) == std::string::npos);
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return metrics_port(read_file(log));
}
}  // namespace

TEST(RevokedGauges, ARevokedPartitionsGaugesLeaveTheScrapeAndTheOthersStay) {
  auto dir = temp_dir("revoked-gauges");
  // counters sets testkit_first_assigned_at once per partition at its first assignment,
  // then revokes counters-1 at offset 1000 (and assigns it again, which sets nothing).
  write_file(dir / "p.yaml", "plugin.path: [" + kPluginPath + "]\n"
                             "metrics: { listen: 127.0.0.1:0 }\n"
                             "pipelines:\n  - name: g\n"
                             "    source: { plugin: counters, config: { count: 1000000000, "
                             "batch.size: 100, partitions: 2, revoke.at: 1000 } }\n"
                             "    sink: { plugin: discard }\n");
  const fs::path log = dir / "log.txt";
  Child c({exactly_bin(), "run", (dir / "p.yaml").string()}, log);
  const int port = wait_for_port_and(log, "revoked counters-1");
  ASSERT_NE(port, 0) << read_file(log);
  ASSERT_NE(read_file(log).find("revoked counters-1"), std::string::npos) << read_file(log);
  const std::string body = scrape(port);
  EXPECT_NE(body.find("exactly_testkit_first_assigned_at{pipeline=\"g\",stage=\"source/counters\","
                      "partition=\"counters-0\"}"),
            std::string::npos)
      << body;
  EXPECT_EQ(body.find("partition=\"counters-1\""), std::string::npos) << body;
  // Counters are not dropped: what was read stays counted.
  EXPECT_NE(body.find("exactly_records_in_total{pipeline=\"g\"}"), std::string::npos) << body;
  c.kill(SIGTERM);
  EXPECT_EQ(c.wait(), 0) << read_file(log);
}

// A pipeline that failed for good has no partitions left on this host (its consumer is
// closed; other hosts take them over): their gauges leave the scrape, as at a revocation,
// and so does every other gauge its stages set; the host's own (pipeline_up) stay.
// They stayed, and a group's hosts summed to more partitions than the topic has (QA).
TEST(RevokedGauges, APipelineThatFailedForGoodTakesItsPartitionsGaugesAlong) {
  auto dir = temp_dir("failed-gauges");
  write_file(dir / "p.yaml", "plugin.path: [" + kPluginPath + "]\n"
                             "metrics: { listen: 127.0.0.1:0 }\n"
                             "pipelines:\n"
                             "  - name: f\n"
                             "    source: { plugin: counters, config: { count: 1000000000, batch.size: 100, partitions: 2 } }\n"
                             "    transforms: [ { plugin: metric, config: { kind: gauge, name: testkit_level, value: 3 } },\n"
                             "                  { plugin: checked, config: { level: 1, refuse.prepare: true } } ]\n"
                             "    sink: { plugin: discard }\n"
                             "  - name: stays\n"
                             "    source: { plugin: counters, config: { count: 1000000000, batch.size: 100, partitions: 1 } }\n"
                             "    sink: { plugin: discard }\n");
  const fs::path log = dir / "log.txt";
  Child c({exactly_bin(), "run", (dir / "p.yaml").string()}, log);
  const int port = wait_for_port_and(log, "failed, not restarted");
  ASSERT_NE(port, 0) << read_file(log);
  ASSERT_NE(read_file(log).find("[pipeline:f] failed, not restarted"), std::string::npos) << read_file(log);
  const std::string body = scrape(port);
  // The pipeline that still runs keeps its partition's gauge; the failed one has none.
  EXPECT_NE(body.find("exactly_testkit_first_assigned_at{pipeline=\"stays\""), std::string::npos) << body;
  EXPECT_EQ(body.find("exactly_testkit_first_assigned_at{pipeline=\"f\""), std::string::npos) << body;
  // Nor any other gauge its stages set (the kafka source's assigned count was one: a
  // failed host's 2 summed with the others' to 10 assigned partitions of 6).
  EXPECT_EQ(body.find("exactly_testkit_level{"), std::string::npos) << body;
  EXPECT_NE(body.find("exactly_pipeline_up{pipeline=\"f\"} 0"), std::string::npos) << body;
  c.kill(SIGTERM);
  c.wait();
}
