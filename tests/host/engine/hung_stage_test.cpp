// A stage that does not return (issue "hardening"): the watchdog names it while it hangs,
// and a stop or a reload gives up on it after shutdown.timeout with a report and exit
// code 3 instead of hanging the host. Through the real binary and the testkit .so.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

const std::string kPlugins = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

std::string yaml(const fs::path& dir, const std::string& top, int64_t sleep_ms, int count = 1000) {
  return "plugin.path: [" + kPlugins + "]\n" + top +
         "pipelines:\n  - name: slow\n"
         "    source: { plugin: counter, config: { count: " + std::to_string(count) + ", batch.size: 10 } }\n"
         "    transforms: [ { plugin: sleep-at, config: { at: 500, ms: " + std::to_string(sleep_ms) + " } } ]\n"
         "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n";
}

int wait_exit(Child& c, std::chrono::seconds limit) {
  int code = 0;
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (c.exited(&code)) return code;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  c.kill(SIGKILL);
  return 1000 + c.wait();
}

}  // namespace

TEST(HungStage, TheWatchdogNamesASlowCallAndThePipelineStillFinishes) {
  auto dir = temp_dir("hung");
  write_file(dir / "p.yaml", yaml(dir, "stage.timeout: 1s\n", 2500));
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto at = r.err.find("stage 'transforms[0]/sleep-at': process() has not returned for");
  ASSERT_NE(at, std::string::npos) << r.err;
  std::string line = r.err.substr(at, r.err.find('\n', at) - at);
  std::printf("%s\n", line.c_str());
  EXPECT_NE(line.find("working on counter-0@500 and 9 more"), std::string::npos) << line;
  // Once per call, not every half second.
  EXPECT_EQ(r.err.find("has not returned for", r.err.find('\n', at)), std::string::npos) << r.err;
  EXPECT_EQ(lines_of(read_file(dir / "out.txt")).size() > 1000, true);
}

TEST(HungStage, AStopGivesUpAfterShutdownTimeoutWithAReportAndExitCode3) {
  auto dir = temp_dir("hung");
  write_file(dir / "p.yaml", yaml(dir, "stage.timeout: 1s\nshutdown.timeout: 2s\n", 3600 * 1000));
  Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "log.txt");
  ASSERT_TRUE(wait_for_text(dir / "log.txt", "has not returned for", 30))
      << read_file(dir / "log.txt");
  auto t0 = std::chrono::steady_clock::now();
  host.kill(SIGTERM);  // one signal: a normal stop, which the hung stage cannot finish
  int code = wait_exit(host, std::chrono::seconds(30));
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string log = read_file(dir / "log.txt");
  EXPECT_EQ(code, 3) << log;
  EXPECT_GE(waited, 1.5) << "it did not wait for shutdown.timeout";
  EXPECT_NE(log.find("did not stop within shutdown.timeout (2 s); still running:\n"
                     "    pipeline 'slow', stage 'transforms[0]/sleep-at': process() running for"),
            std::string::npos)
      << log;
  // The summary still comes, after the report: what was committed before the hang.
  const auto header = log.find("\npipeline ");
  ASSERT_NE(header, std::string::npos) << "no summary at exit 3:\n" << log;
  EXPECT_GT(header, log.find("did not stop within shutdown.timeout")) << log;
  EXPECT_NE(log.find("\nslow ", header), std::string::npos) << log;
}

TEST(HungStage, AReloadThatReplacesAHungPipelineGivesUpAfterShutdownTimeout) {
  auto dir = temp_dir("hung");
  write_file(dir / "p.yaml", yaml(dir, "stage.timeout: 1s\nshutdown.timeout: 2s\n", 3600 * 1000));
  Child host({exactly_bin(), "run", (dir / "p.yaml").string()}, dir / "log.txt");
  ASSERT_TRUE(wait_for_text(dir / "log.txt", "has not returned for", 30))
      << read_file(dir / "log.txt");
  // The operator removes the stuck pipeline (renames it): the reload drains it first.
  std::string text = yaml(dir, "stage.timeout: 1s\nshutdown.timeout: 2s\n", 0);
  text.replace(text.find("name: slow"), 10, "name: fast");
  write_file(dir / "p.yaml.tmp", text);
  fs::rename(dir / "p.yaml.tmp", dir / "p.yaml");
  int code = wait_exit(host, std::chrono::seconds(30));
  std::string log = read_file(dir / "log.txt");
  EXPECT_EQ(code, 3) << log;
  EXPECT_NE(log.find("valid; applying"), std::string::npos) << log;
  EXPECT_NE(log.find("pipeline 'slow' did not stop within shutdown.timeout (2 s)"), std::string::npos) << log;
  EXPECT_NE(log.find("stage 'transforms[0]/sleep-at': process() running for"), std::string::npos) << log;
}

// A bounded run whose input is all committed, with a plugin whose destroy() never
// returns: the host waited for it for good, a batch job never ended (QA). The close is
// held to shutdown.timeout like a stop's, and the report says nothing was left uncommitted.
TEST(HungStage, ABoundedRunWhoseSinkHangsInDestroyEndsAfterShutdownTimeout) {
  auto dir = temp_dir("hung");
  write_file(dir / "p.yaml", "plugin.path: [" + kPlugins + "]\nstage.timeout: 1s\nshutdown.timeout: 2s\n"
                             "pipelines:\n  - name: closing\n"
                             "    source: { plugin: counter, config: { count: 100, batch.size: 10 } }\n"
                             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() +
                             ", close.delay.ms: 3600000 } }\n");
  Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "log.txt");
  int code = wait_exit(host, std::chrono::seconds(30));
  const std::string log = read_file(dir / "log.txt");
  EXPECT_EQ(code, 3) << log;
  EXPECT_NE(log.find("end of input"), std::string::npos) << log;
  EXPECT_NE(log.find("the pipelines ended but did not close within shutdown.timeout (2 s); still running:\n"
                     "    pipeline 'closing', stage 'sink/faulty': destroy() running for"),
            std::string::npos) << log;
  EXPECT_NE(log.find("(those still closing had committed all of their input)"), std::string::npos) << log;
  // Every value was committed before the close began.
  const std::string out = read_file(dir / "out.txt");
  for (int v : {0, 50, 99}) EXPECT_NE(out.find(std::to_string(v) + "\n"), std::string::npos) << v << "\n" << out;
}

TEST(HungStage, TimeoutsAreCheckedByValidate) {
  auto dir = temp_dir("hung");
  write_file(dir / "p.yaml", yaml(dir, "shutdown.timeout: 0s\nstage.timeout: soon\n", 0));
  auto r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  std::string all = r.out + r.err;
  EXPECT_NE(all.find("p.yaml:2:"), std::string::npos) << all;
  EXPECT_NE(all.find("shutdown.timeout"), std::string::npos) << all;
  EXPECT_NE(all.find("stage.timeout"), std::string::npos) << all;
}

// A plugin's validate() runs on the host's main thread while a config loads (at start and
// on every reload), where no signal was read: a stop was ignored, even a second one.
std::string with_slow_validate(const fs::path& dir, const std::string& text) {
  return text + "  - name: checked\n"
                "    source: { plugin: counter, config: { count: 10 } }\n"
                "    transforms: [ { plugin: slow-validate, config: { validate.ms: 3600000 } } ]\n"
                "    sink: { plugin: faulty, config: { path: " + (dir / "checked.txt").string() + " } }\n";
}

TEST(HungStage, AStopWhileAReloadWaitsForAHungValidateEndsAfterShutdownTimeout) {
  auto dir = temp_dir("hung");
  // A pipeline that runs until stopped (10 records a poll, 10 polls a second).
  // Its sink notes when each commit starts (steady clock, as this test's).
  const std::string text = "plugin.path: [" + kPlugins + "]\nstage.timeout: 1s\nshutdown.timeout: 2s\n"
                           "pipelines:\n  - name: steady\n"
                           "    commit: { interval: 100ms }\n"
                           "    source: { plugin: counter, config: { count: 1000000000, batch.size: 10, poll.pace.ms: 100 } }\n"
                           "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() +
                           ", times.path: " + (dir / "times").string() + " } }\n";
  write_file(dir / "p.yaml", text);
  Child host({exactly_bin(), "run", (dir / "p.yaml").string()}, dir / "log.txt");
  ASSERT_TRUE(wait_for_text(dir / "log.txt", "started 1 pipeline", 30)) << read_file(dir / "log.txt");
  write_file(dir / "p.yaml.tmp", with_slow_validate(dir, text));
  fs::rename(dir / "p.yaml.tmp", dir / "p.yaml");
  ASSERT_TRUE(wait_for_text(dir / "log.txt", "validate() has not returned for", 30))
      << read_file(dir / "log.txt");
  const int64_t signalled_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch()).count();
  host.kill(SIGTERM);  // one signal: the stop waits shutdown.timeout for the hung check
  int code = wait_exit(host, std::chrono::seconds(30));
  std::string log = read_file(dir / "log.txt");
  EXPECT_EQ(code, 3) << log;
  // The running pipeline was told to stop at the signal, though the main thread was in
  // the reload's validate(): its running round's commit at most, not a commit every
  // 100 ms until shutdown.timeout.
  int after = 0;
  for (const auto& line : lines_of(read_file(dir / "times")))
    if (std::stoll(line) > signalled_ms) ++after;
  EXPECT_LE(after, 1) << log;
  EXPECT_NE(log.find("signal 15: finishing and committing the running round"), std::string::npos) << log;
  EXPECT_NE(log.find("did not stop within shutdown.timeout (2 s); still running:"), std::string::npos) << log;
  EXPECT_NE(log.find("validate() running for"), std::string::npos) << log;
}

TEST(HungStage, ASecondSignalWhileTheFirstConfigLoadHangsExitsAtOnce) {
  auto dir = temp_dir("hung");
  write_file(dir / "p.yaml", with_slow_validate(dir, yaml(dir, "shutdown.timeout: 1h\n", 0, 0)));
  Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "log.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // inside validate() by now
  host.kill(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  host.kill(SIGTERM);
  int code = wait_exit(host, std::chrono::seconds(10));
  std::string log = read_file(dir / "log.txt");
  EXPECT_EQ(code, 130) << log;
  EXPECT_NE(log.find("second signal: exiting"), std::string::npos) << log;
}

// A plugin that honours host.stopping() (ABI 1.5) gives up its call with an error: the
// host, stopping, must not report that as the pipeline's failure (it logged "fatal").
TEST(HungStage, AStageThatGivesUpBecauseTheHostStopsIsNotAFailure) {
  auto dir = temp_dir("hung");
  std::string text = yaml(dir, "", 3600 * 1000);
  text.replace(text.find("ms: 3600000 }"), 13, "ms: 3600000, give.up.on.stop: true }");
  write_file(dir / "p.yaml", text);
  Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "log.txt");
  ASSERT_TRUE(wait_for_text(dir / "log.txt", "running (counter", 30)) << read_file(dir / "log.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // inside process() at value 500
  host.kill(SIGTERM);
  int code = wait_exit(host, std::chrono::seconds(30));
  std::string log = read_file(dir / "log.txt");
  EXPECT_EQ(code, 0) << log;
  EXPECT_NE(log.find("stopping: the round is aborted (transforms[0]/sleep-at: given up: the host is stopping "
                     "(in process(), working on counter-0@500 and 9 more))"),
            std::string::npos) << log;
  EXPECT_EQ(log.find("ERROR"), std::string::npos) << log;
  EXPECT_EQ(log.find("restarting"), std::string::npos) << log;
}

// `exactly validate` ran a hung plugin validate() forever: a check in CI never ended.
TEST(HungStage, ValidateGivesUpOnAHungPluginValidateAfterStageTimeout) {
  auto dir = temp_dir("hung");
  write_file(dir / "p.yaml", with_slow_validate(dir, "plugin.path: [" + kPlugins + "]\npipelines:\n"));
  auto r = run("timeout 60 " + exactly_bin() + " validate --stage-timeout 1s " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("error: a plugin call did not return within 1 s (--stage-timeout):\n"
                       "pipeline 'checked', stage 'transforms[0]/slow-validate': validate() running for"),
            std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("valid"), std::string::npos) << r.out;
  auto bad = run(exactly_bin() + " validate --stage-timeout soon " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--stage-timeout: soon is not a positive duration"), std::string::npos) << bad.err;
}

// A signal while the first load's validate() runs: once it returns, nothing is started
// (the pipelines were started, then stopped).
TEST(HungStage, AStopDuringTheFirstConfigLoadStartsNothing) {
  auto dir = temp_dir("hung");
  const std::string text = "plugin.path: [" + kPlugins + "]\npipelines:\n"
                           "  - name: checked\n"
                           "    source: { plugin: counter, config: { count: 10 } }\n"
                           "    transforms: [ { plugin: slow-validate, config: { validate.ms: 3000 } } ]\n"
                           "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n";
  write_file(dir / "p.yaml", text);
  Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "log.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // inside validate() by now
  host.kill(SIGTERM);
  int code = wait_exit(host, std::chrono::seconds(30));
  const std::string log = read_file(dir / "log.txt");
  EXPECT_EQ(code, 0) << log;
  EXPECT_NE(log.find("stopped before any pipeline started"), std::string::npos) << log;
  EXPECT_EQ(log.find("running (counter"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(dir / "out.txt")) << log;
}
