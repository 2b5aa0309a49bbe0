// The restart delay doubles while instances keep failing, also when each one commits
// before it fails: behind a source that stores no positions (a sink that keeps none)
// every instance commits the same records again, and resetting the delay on any commit
// looped at the initial delay forever, duplicating the output each time. Through the
// real binary and the testkit .so.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <regex>

#include "test_util.hpp"

using namespace exactly::test;

namespace {
const std::string kPlugins = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

std::vector<int> delays(const std::string& log) {
  std::vector<int> out;
  std::regex re("restarting in ([0-9]+) ms after: .*fail-at reached 40");
  for (std::sregex_iterator it(log.begin(), log.end(), re), end; it != end; ++it)
    out.push_back(std::stoi((*it)[1].str()));
  return out;
}
}  // namespace

TEST(RestartBackoff, InstancesThatCommitThenFailSoonStillBackOff) {
  auto dir = temp_dir("backoff");
  // 10 values a poll, a poll every 20 ms, commits every 30 ms: each instance commits a
  // few rounds of 0..39 before value 40 fails it; the sink keeps no positions.
  write_file(dir / "p.yaml",
             "plugin.path: [" + kPlugins + "]\npipelines:\n  - name: loop\n"
             "    commit.interval: 30ms\n"
             "    restart: { backoff.initial: 100ms, backoff.max: 800ms }\n"
             "    source: { plugin: counter, config: { count: 1000000, batch.size: 10, poll.pace.ms: 20 } }\n"
             "    transforms: [ { plugin: fail-at, config: { at: 40 } } ]\n"
             "    sink: { plugin: discard }\n");
  Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "log.txt");
  ASSERT_TRUE(wait_for_text(dir / "log.txt", "restarting in 800 ms", 30)) << read_file(dir / "log.txt");
  host.kill(SIGTERM);
  host.wait();
  const std::string log = read_file(dir / "log.txt");
  auto d = delays(log);
  ASSERT_GE(d.size(), 4u) << log;
  EXPECT_EQ(std::vector<int>(d.begin(), d.begin() + 4), (std::vector<int>{100, 200, 400, 800})) << log;
  // Those instances did commit before they failed (the summary's commits column).
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex("\\nloop +\\w+ +\\d+ +\\d+ +\\d+ +\\d+ +(\\d+) ")))
      << log;
  EXPECT_GE(std::stoi(m[1].str()), 4) << log;
}

TEST(RestartBackoff, AnInstanceThatLastedStartsOverAtTheInitialDelay) {
  auto dir = temp_dir("backoff");
  // Values 0..39 take ~80 ms, past backoff.max (50 ms): every instance lasted, so each
  // restart waits the initial delay again.
  write_file(dir / "p.yaml",
             "plugin.path: [" + kPlugins + "]\npipelines:\n  - name: loop\n"
             "    commit.interval: 10ms\n"
             "    restart: { backoff.initial: 20ms, backoff.max: 50ms }\n"
             "    source: { plugin: counter, config: { count: 1000000, batch.size: 10, poll.pace.ms: 20 } }\n"
             "    transforms: [ { plugin: fail-at, config: { at: 40 } } ]\n"
             "    sink: { plugin: discard }\n");
  Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "log.txt");
  for (int i = 0; i < 200 && delays(read_file(dir / "log.txt")).size() < 4; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  host.kill(SIGTERM);
  host.wait();
  const std::string log = read_file(dir / "log.txt");
  auto d = delays(log);
  ASSERT_GE(d.size(), 4u) << log;
  for (int x : d) EXPECT_EQ(x, 20) << log;
}

// A reload that fixes a pipeline waiting out its restart backoff waited for a round
// boundary of an instance that did not exist (commit.interval + 10 s, the main loop and
// SIGHUP held), and meanwhile the backoff could start the old definition again. It has no
// round to wait for: it is restarted with the new definition at once.
TEST(RestartBackoff, AReloadReplacesAPipelineInBackoffAtOnce) {
  auto dir = temp_dir("backoff-reload");
  const fs::path conf = dir / "p.yaml", log = dir / "host.log";
  auto with = [&](int at) {
    // A minute's commit interval: a reload that waited for a round boundary would wait
    // it out, past the wait for "applied" below.
    return "plugin.path: [" + kPlugins + "]\npipelines:\n  - name: fb\n"
           "    commit: { interval: 60s }\n"
           "    restart: { backoff: { initial: 50s, max: 50s } }\n"
           "    source: { plugin: counter, config: { count: 1000, batch.size: 10 } }\n"
           "    transforms: [ { plugin: fail-at, config: { at: " + std::to_string(at) + " } } ]\n"
           "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n";
  };
  write_file(conf, with(500));
  Child host({exactly_bin(), "run", conf.string()}, log);
  ASSERT_TRUE(wait_for_text(log, "restarting in 50000 ms", 20)) << read_file(log);
  write_file(conf, with(5000));
  ASSERT_TRUE(wait_for_text(log, "applied", 30)) << read_file(log);
  host.kill(SIGTERM);
  host.wait();
  const std::string text = read_file(log);
  EXPECT_NE(text.find("restarted=fb"), std::string::npos) << text;
  // The new definition runs past the old one's failing record.
  EXPECT_EQ(text.find("cannot change in place"), std::string::npos) << text;
  EXPECT_EQ(text.find("fail-at reached 500", text.find("applied")), std::string::npos) << text;
}
