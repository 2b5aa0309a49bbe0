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

namespace {
// /readyz, asked every 50 ms until its answer holds `want` (for up to 15 s): the last answer.
std::string readyz_until(int port, const std::string& want) {
  std::string body;
  for (int i = 0; i < 300 && body.find(want) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    body = scrape(port, "/readyz");
  }
  return body;
}
}  // namespace

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

// What an orchestrator and an alert need from the same endpoint: /healthz answers while
// the host runs; /readyz is 503 while a pipeline is down (its open hangs) and names it,
// 200 once every pipeline is up; the host's own counters exist at 0 from the start (an
// alert on `increase(exactly_restarts_total[1h]) > 0` had no earlier sample and missed
// each pipeline's first restart, QA); exactly_build_info carries the version.
TEST(PipelineUp, HealthAndReadinessEndpointsAndCountersFromZero) {
  auto dir = temp_dir("pipeline-ready");
  auto config = [&](const std::string& delay) {
    write_file(dir / "p.yaml", "plugin.path: [" + std::string(EXACTLY_BUILD_DIR) + "/test-plugins]\n"
                               "metrics: { listen: 127.0.0.1:0 }\n"
                               "pipelines:\n"
                               "  - name: slow\n"
                               "    source: { plugin: counter, config: { count: 1000000000, poll.pace.ms: 5 } }\n"
                               "    sink: { plugin: faulty, config: { path: " + (dir / "a.txt").string() +
                               ", open.delay.ms: " + delay + " } }\n");
  };
  config("600000");
  const fs::path log = dir / "log.txt";
  Child c({exactly_bin(), "run", (dir / "p.yaml").string()}, log);
  const std::string page = scrape_until(log, "exactly_pipeline_up{pipeline=\"slow\"} 0");
  const int port = metrics_port(read_file(log));
  ASSERT_NE(port, 0) << read_file(log);
  for (const char* counter : {"records_in_total", "commits_total", "aborts_total", "restarts_total"})
    EXPECT_NE(page.find(std::string("exactly_") + counter + "{pipeline=\"slow\"} 0"), std::string::npos)
        << counter << " has no series before its first count:\n" << page;
  EXPECT_NE(page.find("exactly_build_info{version=\""), std::string::npos) << page;
  const std::string health = scrape(port, "/healthz");
  EXPECT_EQ(health.rfind("HTTP/1.1 200", 0), 0u) << health;
  const std::string down = scrape(port, "/readyz");
  EXPECT_EQ(down.rfind("HTTP/1.1 503", 0), 0u) << down;
  EXPECT_NE(down.find("pipeline slow: down"), std::string::npos) << down;

  config("0");  // the reload restarts it with an open that returns
  const std::string ready = readyz_until(port, "HTTP/1.1 200");
  EXPECT_EQ(ready.rfind("HTTP/1.1 200", 0), 0u) << ready << read_file(log);
  EXPECT_NE(ready.find("pipeline slow: up"), std::string::npos) << ready;
  c.kill(SIGTERM);
  c.wait();
}

// A pipeline whose every round aborts (a sink that cannot commit) stays up between its
// rebuilds and moves nothing: exactly_pipeline_up said 1 and /readyz said ready (QA).
// exactly_pipeline_aborts_in_a_row counts the rounds since the last commit, /readyz is 503
// and names it, and both clear once a round commits (here after a reload fixes the sink).
TEST(PipelineUp, RoundsAbortingInARowMakeThePipelineNotReady) {
  auto dir = temp_dir("pipeline-aborting");
  auto config = [&](const std::string& p_abort) {
    write_file(dir / "p.yaml", "plugin.path: [" + std::string(EXACTLY_BUILD_DIR) + "/test-plugins]\n"
                               "metrics: { listen: 127.0.0.1:0 }\n"
                               "pipelines:\n"
                               "  - name: aborting\n"
                               "    source: { plugin: counter, config: { count: 1000000000, poll.pace.ms: 5 } }\n"
                               "    sink: { plugin: faulty, config: { path: " + (dir / "a.txt").string() +
                               ", abort.probability: " + p_abort + ", seed: 7 } }\n"
                               "  - name: fine\n"
                               "    source: { plugin: counter, config: { count: 1000000000, poll.pace.ms: 5 } }\n"
                               "    sink: { plugin: faulty, config: { path: " + (dir / "b.txt").string() + " } }\n");
  };
  config("1.0");
  const fs::path log = dir / "log.txt";
  Child c({exactly_bin(), "run", (dir / "p.yaml").string()}, log);
  const std::string page = scrape_until(log, "exactly_pipeline_aborts_in_a_row{pipeline=\"aborting\"} 3");
  EXPECT_NE(page.find("exactly_pipeline_aborts_in_a_row{pipeline=\"aborting\"} 3"), std::string::npos)
      << page << read_file(log);
  EXPECT_NE(page.find("exactly_pipeline_aborts_in_a_row{pipeline=\"fine\"} 0"), std::string::npos) << page;
  const int port = metrics_port(read_file(log));
  ASSERT_NE(port, 0) << read_file(log);
  const std::string aborting = scrape(port, "/readyz");
  EXPECT_EQ(aborting.rfind("HTTP/1.1 503", 0), 0u) << aborting;
  EXPECT_NE(aborting.find("pipeline aborting: up, its last "), std::string::npos) << aborting;
  EXPECT_NE(aborting.find("pipeline fine: up\n"), std::string::npos) << aborting;

  config("0.0");  // the reload restarts it with a sink that commits
  const std::string ready = readyz_until(port, "HTTP/1.1 200");
  EXPECT_EQ(ready.rfind("HTTP/1.1 200", 0), 0u) << ready << read_file(log);
  EXPECT_NE(scrape(port).find("exactly_pipeline_aborts_in_a_row{pipeline=\"aborting\"} 0"), std::string::npos);
  c.kill(SIGTERM);
  c.wait();
}

// A bounded pipeline that finished its input is done, not down: /readyz stayed 503 for
// good once one had finished beside others still running (QA). It says "finished" and
// counts as ready; exactly_pipeline_finished is 1 for it and 0 for the running one.
TEST(PipelineUp, AFinishedBoundedPipelineCountsAsReady) {
  auto dir = temp_dir("pipeline-finished");
  write_file(dir / "p.yaml", "plugin.path: [" + std::string(EXACTLY_BUILD_DIR) + "/test-plugins]\n"
                             "metrics: { listen: 127.0.0.1:0 }\n"
                             "pipelines:\n"
                             "  - name: backfill\n"
                             "    source: { plugin: counter, config: { count: 50 } }\n"
                             "    sink: { plugin: faulty, config: { path: " + (dir / "b.txt").string() + " } }\n"
                             "  - name: live\n"
                             "    source: { plugin: counter, config: { count: 1000000000, poll.pace.ms: 5 } }\n"
                             "    sink: { plugin: faulty, config: { path: " + (dir / "a.txt").string() + " } }\n");
  const fs::path log = dir / "log.txt";
  Child c({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, log);
  const std::string page = scrape_until(log, "exactly_pipeline_finished{pipeline=\"backfill\"} 1");
  EXPECT_NE(page.find("exactly_pipeline_finished{pipeline=\"live\"} 0"), std::string::npos) << page;
  const int port = metrics_port(read_file(log));
  ASSERT_NE(port, 0) << read_file(log);
  const std::string ready = readyz_until(port, "HTTP/1.1 200");
  EXPECT_EQ(ready.rfind("HTTP/1.1 200", 0), 0u) << ready << read_file(log);
  EXPECT_NE(ready.find("pipeline backfill: finished"), std::string::npos) << ready;
  EXPECT_NE(ready.find("pipeline live: up"), std::string::npos) << ready;
  c.kill(SIGTERM);
  EXPECT_EQ(c.wait(), 0) << read_file(log);
}

// A commit held up has not failed yet: one waiting out a broker outage left /readyz 200
// for the 10-30 s until the sink gave up (QA r10). Past ready.commit.timeout the pipeline
// is not ready and its line says how long the commit has run; ready.commit.timeout 0
// turns that off; commits that end in time clear it. A round held outside its commit (a
// sink's backpressure, here a stage that takes its time) is the pipeline working at its
// pace: it stays ready.
TEST(PipelineUp, ACommitHeldPastItsLimitMakesThePipelineNotReady) {
  auto dir = temp_dir("pipeline-held");
  auto config = [&](const std::string& held_commit_ms) {
    auto pipeline = [&](const std::string& name, const std::string& commit_ms, const std::string& limit,
                        const std::string& transforms = "") {
      return "  - name: " + name + "\n"
             "    commit.interval: 200ms\n"
             "    ready.commit.timeout: " + limit + "\n"
             "    source: { plugin: counter, config: { count: 1000000000, poll.pace.ms: 5 } }\n" +
             (transforms.empty() ? "" : "    transforms: [ " + transforms + " ]\n") +
             "    sink: { plugin: faulty, config: { path: " + (dir / (name + ".txt")).string() +
             ", commit.delay.ms: " + commit_ms + " } }\n";
    };
    write_file(dir / "p.yaml", "plugin.path: [" + std::string(EXACTLY_BUILD_DIR) + "/test-plugins]\n"
                               "metrics: { listen: 127.0.0.1:0 }\n"
                               "pipelines:\n" +
                                   pipeline("held", held_commit_ms, "1s") + pipeline("unlimited", "3000", "0") +
                                   pipeline("fine", "0", "10s") +
                                   pipeline("slow", "0", "1s",
                                            "{ plugin: sleep-at, config: { at: 20, ms: 600000, give.up.on.stop: true } }"));
  };
  config("3000");
  const fs::path log = dir / "log.txt";
  Child c({exactly_bin(), "run", (dir / "p.yaml").string()}, log);
  const std::string page = scrape_until(log, "exactly_pipeline_commit_ready_seconds{pipeline=\"held\"} 1");
  EXPECT_NE(page.find("exactly_pipeline_commit_ready_seconds{pipeline=\"unlimited\"} 0"), std::string::npos) << page;
  const int port = metrics_port(read_file(log));
  ASSERT_NE(port, 0) << read_file(log);
  const std::string held = readyz_until(port, "pipeline held: up, its commit has run ");
  EXPECT_EQ(held.rfind("HTTP/1.1 503", 0), 0u) << held << read_file(log);
  EXPECT_NE(held.find("pipeline held: up, its commit has run "), std::string::npos) << held;
  EXPECT_NE(held.find("(more than ready.commit.timeout, 1 s)"), std::string::npos) << held;
  EXPECT_NE(held.find("pipeline unlimited: up\n"), std::string::npos) << held;
  EXPECT_NE(held.find("pipeline fine: up\n"), std::string::npos) << held;
  EXPECT_NE(held.find("pipeline slow: up\n"), std::string::npos) << held;

  config("0");  // the reload restarts it with a sink that commits at once
  const std::string ready = readyz_until(port, "HTTP/1.1 200");
  EXPECT_EQ(ready.rfind("HTTP/1.1 200", 0), 0u) << ready << read_file(log);
  EXPECT_NE(ready.find("pipeline held: up\n"), std::string::npos) << ready;
  c.kill(SIGTERM);
  EXPECT_EQ(c.wait(), 0) << read_file(log);
}
