// ABI 1.2 holds through the real binary and real .so plugins: a stage holds one partition
// back (as a dedupe stage restoring in its own thread does); the host pauses only that
// partition at the source, the other flows, and after the release every value of both
// arrives exactly once, in order per partition.
#include <gtest/gtest.h>

#include <map>

#include "test_util.hpp"

using namespace exactly::test;

namespace {
const std::string kPluginPath = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

std::string yaml(const fs::path& out, const std::string& source, int hold_ms = 1500) {
  return "plugin.path: [" + kPluginPath + "]\npipelines:\n  - name: t\n    delivery: exactly_once\n"
         "    commit: { max.records: 200, interval: 5s }\n"
         "    source: " + source + "\n"
         "    transforms:\n      - { plugin: hold-one, config: { hold: counters-0, hold.ms: " + std::to_string(hold_ms) + " } }\n"
         "    sink: { plugin: faulty, config: { path: " + out.string() + " } }\n";
}

}  // namespace

TEST(HeldPartitions, OnlyTheHeldPartitionWaitsAndNothingIsLostOrRepeated) {
  auto dir = temp_dir("held");
  const int n = 2000;
  write_file(dir / "p.yaml", yaml(dir / "out.txt", "{ plugin: counters, config: { count: " +
                                                       std::to_string(n) + ", batch.size: 50, partitions: 2 } }"));
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<int, std::vector<int>> seen;
  long first_held = -1, last_other = -1, line_no = 0;
  for (const auto& l : lines_of(read_file(dir / "out.txt"))) {
    if (l.empty() || l[0] == '#') continue;
    int p = std::stoi(l.substr(0, l.find(':')));
    seen[p].push_back(std::stoi(l.substr(l.find(':') + 1)));
    if (p == 0 && first_held < 0) first_held = line_no;
    if (p == 1) last_other = line_no;
    ++line_no;
  }
  for (int p : {0, 1}) {
    ASSERT_EQ(seen[p].size(), static_cast<size_t>(n)) << "partition " << p;
    for (int i = 0; i < n; ++i) ASSERT_EQ(seen[p][i], i) << "partition " << p << " at " << i;
  }
  // Partition 1 went all the way while partition 0 was held (1.5 s).
  EXPECT_GT(first_held, last_other);
  EXPECT_NE(r.err.find("holds back counters-0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("resumed counters-0 at offset 0"), std::string::npos) << r.err;
}

// A stage that holds a partition and is ready at once releases it before the host has
// even paused it: the poll that announced the assignment already returned records of it,
// and the resume puts the source back at the partition's start. Those records must not
// go through as well (a scale-out run emitted a 5,000-record backlog twice that way).
TEST(HeldPartitions, APartitionReleasedInTheSamePollAsItsHoldRepeatsNothing) {
  auto dir = temp_dir("held");
  const int n = 400;
  write_file(dir / "p.yaml", yaml(dir / "out.txt", "{ plugin: counters, config: { count: " +
                                                       std::to_string(n) + ", batch.size: 50, partitions: 2 } }",
                                  0));
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<int, std::vector<int>> seen;
  for (const auto& l : lines_of(read_file(dir / "out.txt"))) {
    if (l.empty() || l[0] == '#') continue;
    seen[std::stoi(l.substr(0, l.find(':')))].push_back(std::stoi(l.substr(l.find(':') + 1)));
  }
  for (int p : {0, 1}) {
    ASSERT_EQ(seen[p].size(), static_cast<size_t>(n)) << "partition " << p;
    for (int i = 0; i < n; ++i) ASSERT_EQ(seen[p][i], i) << "partition " << p << " at " << i;
  }
  EXPECT_NE(r.err.find("resumed counters-0 at offset 0"), std::string::npos) << r.err;
}

TEST(HeldPartitions, ASourceThatCannotPauseOnePartitionMakesTheStagePrepareInline) {
  auto dir = temp_dir("held");
  std::string y = yaml(dir / "out.txt", "{ plugin: counter, config: { count: 500, batch.size: 50 } }");
  y.replace(y.find("hold: counters-0"), 16, "hold: counter-0");
  write_file(dir / "p.yaml", y);
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("the host cannot hold counter-0"), std::string::npos) << r.err;
  size_t values = 0;
  for (const auto& l : lines_of(read_file(dir / "out.txt"))) values += !l.empty() && l[0] != '#';
  EXPECT_EQ(values, 500u);
}
