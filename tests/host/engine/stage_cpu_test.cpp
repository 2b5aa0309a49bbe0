// stage_cpu_seconds_total through the real binary and real .so plugins: every stage's
// calls are counted under their own call name, on whichever thread runs them (a task's
// transforms on the task threads with threads: 2), and the stage that computes on every
// record shows far more CPU than the source and sink around it. Relations only: no time
// is asserted.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include "metrics_scrape.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {
const std::string kPluginPath = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

// The value of stage_cpu_seconds_total for (stage, call) on the page, or -1.
double cpu_of(const std::string& body, const std::string& stage, const std::string& call) {
  const std::string head = "exactly_stage_cpu_seconds_total{pipeline=\"c\",stage=\"" + stage +
                           "\",call=\"" + call + "\"} ";
  const auto at = body.find(head);
  if (at == std::string::npos) return -1;
  return std::stod(body.substr(at + head.size()));
}

class StageCpu : public ::testing::TestWithParam<int> {};

TEST_P(StageCpu, EveryStageIsCountedAndTheComputingOneLeads) {
  const int threads = GetParam();
  auto dir = temp_dir("stage-cpu");
  write_file(dir / "p.yaml",
             "plugin.path: [" + kPluginPath + "]\n"
             "metrics: { listen: 127.0.0.1:0 }\n"
             "pipelines:\n  - name: c\n    delivery: exactly_once\n"
             "    threads: " + std::to_string(threads) + "\n"
             "    commit: { interval: 100ms }\n"
             "    source: { plugin: counters, config: { count: 1000000000, batch.size: 100, "
             "partitions: 4 } }\n"
             "    transforms:\n      - { plugin: burn, config: { rounds.per.record: 20000, "
             "rounds.per.assign: 200000000 } }\n"
             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
  const fs::path log = dir / "log.txt";
  Child c({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, log);
  // Until the computing stage has some CPU counted and the sink committed after it.
  std::string body;
  for (int i = 0; i < 300; ++i) {
    body = scrape_until(log, "stage=\"sink/faulty\",call=\"commit\"");
    if (cpu_of(body, "transforms[0]/burn", "process") >= 0.5) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double burn = cpu_of(body, "transforms[0]/burn", "process");
  const double poll = cpu_of(body, "source/counters", "poll");
  const double write = cpu_of(body, "sink/faulty", "write");
  const double host = cpu_of(body, "host", "pipeline_thread");
  c.kill(SIGTERM);
  EXPECT_EQ(c.wait(), 0) << read_file(log);
  ASSERT_GE(burn, 0.5) << body;
  EXPECT_GT(poll, 0) << body;
  EXPECT_GT(write, 0) << body;
  EXPECT_GE(host, 0) << "no host series\n" << body;
  EXPECT_GE(cpu_of(body, "sink/faulty", "commit"), 0) << body;
  // The counters source assigns its partitions from inside poll(), and the transform's
  // assign computes 200M rounds: its CPU counts for the transform's assign, and the poll
  // around it keeps only its own share.
  const double assign = cpu_of(body, "transforms[0]/burn", "assign");
  EXPECT_GT(assign, 0) << body;
  EXPECT_GT(assign, 5 * poll) << body;
  // 20,000 dependent multiply-adds a record against a counter and a line of text.
  EXPECT_GT(burn, 5 * (poll + write)) << body;
}

INSTANTIATE_TEST_SUITE_P(Threads, StageCpu, ::testing::Values(1, 2),
                         [](const auto& info) { return "threads_" + std::to_string(info.param); });
}  // namespace
