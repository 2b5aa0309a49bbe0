// SIGUSR1 and SIGUSR2 print the summary so far and the host goes on: their default
// action ends a process, and log rotation scripts send them to daemons (QA: a stray
// `kill -USR1` ended the host mid-round, with no summary).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <regex>
#include <thread>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

// The `in` column of the pipeline's row in the last table printed so far.
long long last_in(const std::string& out, const std::string& name) {
  long long in = -1;
  std::smatch m;
  const std::regex row("\n" + name + R"( +running +([0-9]+) +[0-9]+)");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), row); it != std::sregex_iterator(); ++it)
    in = std::stoll((*it)[1]);
  return in;
}

}  // namespace

TEST(StatusSignal, Usr1AndUsr2PrintTheCountsSoFarAndTheHostGoesOn) {
  auto dir = temp_dir("status-signal");
  write_file(dir / "p.yaml", "plugin.path: [" + std::string(EXACTLY_BUILD_DIR) + "/test-plugins]\n"
                             "pipelines:\n"
                             "  - name: steady\n"
                             "    source: { plugin: counter, config: { count: 1000000000, poll.pace.ms: 5 } }\n"
                             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
  const fs::path log = dir / "log.txt";
  Child c({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, log);
  ASSERT_TRUE(wait_for_text(log, "started 1 pipeline(s)", 30)) << read_file(log);
  // Records committed before the first status, so its row has counts to show.
  for (int i = 0; i < 200 && !fs::exists(dir / "out.txt"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));

  c.kill(SIGUSR1);
  ASSERT_TRUE(wait_for_text(log, "SIGUSR1: status so far", 10)) << read_file(log);
  for (int i = 0; i < 100 && last_in(read_file(log), "steady") < 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const long long first = last_in(read_file(log), "steady");
  EXPECT_GT(first, 0) << read_file(log);

  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  int code = 0;
  ASSERT_FALSE(c.exited(&code)) << "SIGUSR1 ended the host (" << code << "):\n" << read_file(log);
  c.kill(SIGUSR2);
  ASSERT_TRUE(wait_for_text(log, "SIGUSR2: status so far", 10)) << read_file(log);
  for (int i = 0; i < 100 && count_of(read_file(log), "\nsteady ") < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // The second table counts what was committed since the first.
  EXPECT_GT(last_in(read_file(log), "steady"), first) << read_file(log);
  ASSERT_FALSE(c.exited(&code)) << "SIGUSR2 ended the host (" << code << "):\n" << read_file(log);

  c.kill(SIGTERM);
  EXPECT_EQ(c.wait(), 0) << read_file(log);
  // The end's summary too: three tables in all.
  EXPECT_EQ(count_of(read_file(log), "\nsteady "), 3) << read_file(log);
}
