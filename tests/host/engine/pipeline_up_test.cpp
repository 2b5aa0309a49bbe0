// exactly_pipeline_up while a sink's open() hangs (a cluster that does not answer): the
// series must exist and be 0, or the documented alert `exactly_pipeline_up == 0` never
// fires for the pipeline that most needs it. It had no series until a first open.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "metrics_scrape.hpp"
#include "test_util.hpp"

using namespace exactly::test;

TEST(PipelineUp, IsZeroWhileOpenHangsAndOneOnceItRuns) {
  auto dir = temp_dir("pipeline-up");
  write_file(dir / "p.yaml", "plugin.path: [" + std::string(EXACTLY_BUILD_DIR) + "/test-plugins]\n"
                             "metrics: { listen: 127.0.0.1:0 }\n"
                             "pipelines:\n"
                             "  - name: stuck\n"
                             "    source: { plugin: counter, config: { count: 1000000000, poll.pace.ms: 5 } }\n"
                             "    sink: { plugin: faulty, config: { path: " + (dir / "a.txt").string() +
                             ", open.delay.ms: 600000 } }\n"
                             "  - name: fine\n"
                             "    source: { plugin: counter, config: { count: 1000000000, poll.pace.ms: 5 } }\n"
                             "    sink: { plugin: faulty, config: { path: " + (dir / "b.txt").string() + " } }\n");
  const fs::path log = dir / "log.txt";
  Child c({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, log);
  const std::string body = scrape_until(log, "exactly_pipeline_up{pipeline=\"fine\"} 1");
  c.kill(SIGTERM);
  EXPECT_EQ(c.wait(), 0) << read_file(log);
  EXPECT_NE(body.find("exactly_pipeline_up{pipeline=\"fine\"} 1"), std::string::npos) << body;
  EXPECT_NE(body.find("exactly_pipeline_up{pipeline=\"stuck\"} 0"), std::string::npos) << body;
}
