// A reload that changes a dedupe stage's settings in place (no restart) says which keys
// moved, once for the stage, not once per task; and every key it lets through is taken
// (standby.budget and changelog.catch.up.timeout were accepted but left at their old
// values; QA r9: "changed in place" was said once per task with threads: 2).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

std::string yaml(const fs::path& dir, const std::string& dedupe_extra) {
  return "pipelines:\n"
         "  - name: p\n"
         "    threads: 2\n"
         "    commit: { interval: 100ms }\n"
         "    source: { plugin: generator, config: { count: 0, rate: 400, partitions: 4 } }\n"
         "    transforms:\n"
         "      - plugin: dedupe\n"
         "        config: { id.json: /messageId, state.dir: " + (dir / "state").string() +
         ", changelog: off" + dedupe_extra + " }\n"
         "    sink: { plugin: file, config: { path: " + (dir / "out.jsonl").string() +
         ", fsync: false } }\n";
}

bool wait_for_count(const fs::path& log, const std::string& text, int n, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (count_of(read_file(log), text) >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return count_of(read_file(log), text) >= n;
}

}  // namespace

TEST(DedupeReconfigureLog, SaysTheKeysThatMovedOncePerStage) {
  fs::path dir = temp_dir("dedupe-reconfigure-log");
  fs::path conf = dir / "p.yaml", log = dir / "host.log";
  write_file(conf, yaml(dir, ""));
  Child host({exactly_bin(), "run", conf.string()}, log);
  ASSERT_TRUE(wait_for_text(log, "started 1 pipeline", 30)) << read_file(log);
  // Both tasks hold partitions before the edit (each has its instance).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));

  write_file(conf, yaml(dir, ", retention.max.keys: 1000, standby.budget: 0ms, "
                             "changelog.catch.up.timeout: 5s, on.conflict: reject"));
  ASSERT_TRUE(wait_for_count(log, "transform parameters changed in place", 1, 30)) << read_file(log);
  const std::string there =
      "dedupe: changed in place: retention.max.keys 0 -> 1000, on.conflict duplicate -> reject, "
      "changelog.catch.up.timeout 30000 ms -> 5000 ms, standby.budget 200 ms -> 0 ms";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(count_of(read_file(log), there), 1) << read_file(log);

  // And back: the reverse is said once too, though it is not the stage's first line.
  write_file(conf, yaml(dir, ""));
  ASSERT_TRUE(wait_for_count(log, "transform parameters changed in place", 2, 30)) << read_file(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string text = read_file(log);
  EXPECT_EQ(count_of(text, "dedupe: changed in place: retention.max.keys 1000 -> 0, on.conflict "
                           "reject -> duplicate, changelog.catch.up.timeout 5000 ms -> 30000 ms, "
                           "standby.budget 0 ms -> 200 ms"),
            1)
      << text;
  EXPECT_EQ(count_of(text, "restarted=p"), 0) << text;
  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0) << read_file(log);
}
