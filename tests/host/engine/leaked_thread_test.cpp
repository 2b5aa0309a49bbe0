// A plugin thread that outlives its instance (started in create, never stopped in
// destroy) still calls the host after a reload removed its pipeline. That broke the ABI's
// lifetime rule and aborted the host (a freed binding read by the thread); now the host
// answers such calls without touching the pipeline: lines marked and attributed, metrics
// dropped, stopping() = 1, every other call refused. Through the real binary and the
// testkit .so. Also: one runaway plugin line is cut, not written whole.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

const std::string kPlugins = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

std::string steady(const fs::path& dir) {
  return "plugin.path: [" + kPlugins + "]\n"
         "pipelines:\n  - name: steady\n"
         "    source: { plugin: counter, config: { count: 1000000000, batch.size: 10, poll.pace.ms: 50 } }\n"
         "    sink: { plugin: faulty, config: { path: " + (dir / "steady.txt").string() + " } }\n";
}

std::string with_leaky(const fs::path& dir, const std::string& extra = "") {
  return steady(dir) +
         "  - name: leaky\n    threads: 1\n"
         "    source: { plugin: counter, config: { count: 1000000000, batch.size: 10, poll.pace.ms: 50 } }\n"
         "    transforms: [ { plugin: leak-thread, config: { lines: 60, every.ms: 50, done.path: " +
         (dir / "done.txt").string() + extra + " } } ]\n"
         "    sink: { plugin: faulty, config: { path: " + (dir / "leaky.txt").string() + " } }\n";
}

bool wait_for_file(const fs::path& p, int seconds) {
  for (int i = 0; i < seconds * 20; ++i) {
    if (fs::exists(p) && !read_file(p).empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace

TEST(LeakedThread, CallsAfterAReloadRemovedItsPipelineAreAnsweredNotFatal) {
  auto dir = temp_dir("leak");
  write_file(dir / "p.yaml", with_leaky(dir));
  Child host({exactly_bin(), "run", (dir / "p.yaml").string()}, dir / "log.txt");
  ASSERT_TRUE(wait_for_text(dir / "log.txt", "leaked line 3", 30)) << read_file(dir / "log.txt");
  write_file(dir / "p.yaml.tmp", steady(dir));
  fs::rename(dir / "p.yaml.tmp", dir / "p.yaml");
  ASSERT_TRUE(wait_for_text(dir / "log.txt", "removed=leaky", 30)) << read_file(dir / "log.txt");
  // The thread goes on for the rest of its 3 s, all of it after the destroy.
  ASSERT_TRUE(wait_for_file(dir / "done.txt", 30)) << read_file(dir / "log.txt");
  int code = 0;
  ASSERT_FALSE(host.exited(&code)) << "the host died (code " << code << "):\n" << read_file(dir / "log.txt");
  const std::string done = read_file(dir / "done.txt");
  EXPECT_NE(done.find("stopping=1"), std::string::npos) << done;
  EXPECT_NE(done.find("assigned=partitions_assigned after stage 'transforms[0]/leak-thread' was destroyed"),
            std::string::npos) << done;

  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0);
  const std::string log = read_file(dir / "log.txt");
  EXPECT_NE(log.find("[pipeline:leaky] stage 'transforms[0]/leak-thread' (" + kPlugins +
                     "/exactly_testkit.so) still logs after its destroy()"),
            std::string::npos) << log;
  EXPECT_NE(log.find("[pipeline:leaky] [transforms[0]/leak-thread after destroy] leaked line 59"),
            std::string::npos) << log;
  // After the removal the late assignment reached no instance.
  EXPECT_EQ(log.find("assigned late-7", log.find("removed=leaky")), std::string::npos) << log;
  EXPECT_EQ(log.find("fatal"), std::string::npos) << log;
}

TEST(LeakedThread, AnOverlongPluginLineIsCut) {
  auto dir = temp_dir("leak");
  write_file(dir / "p.yaml", with_leaky(dir, ", first.line.bytes: 100000"));
  Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "log.txt");
  ASSERT_TRUE(wait_for_text(dir / "log.txt", "leaked line 0", 30)) << read_file(dir / "log.txt");
  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0);
  const std::string log = read_file(dir / "log.txt");
  auto at = log.find("big line x");
  ASSERT_NE(at, std::string::npos) << log.substr(0, 2000);
  const std::string line = log.substr(at, log.find('\n', at) - at);
  // 100,013 bytes ("big line ", the x's, " end"): the first 16,384 kept, then the note.
  EXPECT_LT(line.size(), 16 * 1024 + 100) << line.size();
  EXPECT_NE(line.find("[... 83629 more bytes cut by the host]"), std::string::npos) << line.substr(16000);
  EXPECT_EQ(line.find(" end"), std::string::npos);
}

// A leaked thread that calls partitions_assigned over and over while its pipeline stops.
// Such a call used to change the pipeline's partitions under the round, and one that
// read the running instance just before the teardown reached a stage whose destroy() had
// run (SIGSEGV in about 2% of stops at one call per 50 ms, in AnOverlongPluginLineIsCut).
// Now partitions_assigned is refused off the pipeline's thread, and the teardown waits for
// the calls that reach the instance (hold, standby) once it has cleared it.
TEST(LeakedThread, SourceCallsFromALeakedThreadDuringTheTeardownReachNoDestroyedStage) {
  for (int round = 0; round < 5; ++round) {
    auto dir = temp_dir("leak");
    write_file(dir / "p.yaml", with_leaky(dir, ", late.assign.spin: true"));
    Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "log.txt");
    ASSERT_TRUE(wait_for_text(dir / "log.txt", "leaked line 2", 30)) << read_file(dir / "log.txt");
    host.kill(SIGTERM);
    EXPECT_EQ(host.wait(), 0) << "round " << round << ":\n" << read_file(dir / "log.txt");
  }
}
