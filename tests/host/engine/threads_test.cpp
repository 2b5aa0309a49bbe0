// `threads:` through the real binary and real .so plugins: the pipeline's partitions are
// split into tasks, each with its own transform instances on its own thread; every
// partition stays in one task (its order kept), every record comes out once, and the
// tasks really run at the same time.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>

#include "test_util.hpp"

using namespace exactly::test;

namespace {
const std::string kPluginPath = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

struct Result {
  RunResult run;
  std::map<int, std::vector<int>> values;   // partition -> values in output order
  std::map<int, std::set<std::string>> tags;  // partition -> instances that tagged it
  long overlaps = -1;
  long fanned_out = -1;  // batches whose tasks were offered to the task threads
};

Result run_with(int threads, int n) {
  auto dir = temp_dir("threads");
  write_file(dir / "p.yaml",
             "plugin.path: [" + kPluginPath + "]\npipelines:\n  - name: t\n    delivery: exactly_once\n"
             "    threads: " + std::to_string(threads) + "\n"
             "    commit: { max.records: 1000, interval: 5s }\n"
             "    source: { plugin: counters, config: { count: " + std::to_string(n) +
             ", batch.size: 200, partitions: 4 } }\n"
             "    transforms:\n      - { plugin: tag-task, config: { sleep.us: 200 } }\n"
             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
  Result r;
  r.run = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  std::regex line(R"((\d+):(\d+)@(\d+))");
  for (const auto& l : lines_of(read_file(dir / "out.txt"))) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    int p = std::stoi(m[1]);
    r.values[p].push_back(std::stoi(m[2]));
    r.tags[p].insert(m[3]);
  }
  std::smatch m;
  std::string all = r.run.out + r.run.err;
  if (std::regex_search(all, m, std::regex(R"(tag_task_overlaps_total\s+(\d+))"))) r.overlaps = std::stol(m[1]);
  if (std::regex_search(all, m, std::regex(R"(task_batches_fanned_out_total\s+(\d+))")))
    r.fanned_out = std::stol(m[1]);
  return r;
}

void expect_each_value_once_in_order(const Result& r, int n) {
  ASSERT_EQ(r.values.size(), 4u) << r.run.err;
  for (const auto& [p, v] : r.values) {
    ASSERT_EQ(v.size(), static_cast<size_t>(n)) << "partition " << p;
    for (int i = 0; i < n; ++i) ASSERT_EQ(v[static_cast<size_t>(i)], i) << "partition " << p;
  }
}
}  // namespace

TEST(Threads, TwoTasksSplitThePartitionsKeepTheirOrderAndRunAtOnce) {
  const int n = 2000;
  Result r = run_with(2, n);
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  expect_each_value_once_in_order(r, n);
  std::set<std::string> instances;
  for (const auto& [p, tags] : r.tags) {
    EXPECT_EQ(tags.size(), 1u) << "partition " << p << " went through more than one task";
    instances.insert(tags.begin(), tags.end());
  }
  EXPECT_EQ(instances.size(), 2u) << "two tasks, each its own transform instance";
  EXPECT_EQ(r.tags[0], r.tags[2]);  // partition id % tasks
  EXPECT_EQ(r.tags[1], r.tags[3]);
  EXPECT_GT(r.overlaps, 0) << "the two tasks never ran at the same time\n" << r.run.out << r.run.err;
  // Tasks that wait (sleep.us) run faster side by side, so the pool keeps fanning out.
  // Each task sleeps 20 ms per batch (100 records x 200 us): a worker woken late on a
  // busy machine still claims its task long before the caller is done with its own (at
  // 20 us per record, 2 ms, the caller ran both in a loaded CI minute and the pool rightly
  // stopped fanning out).
  EXPECT_GT(r.fanned_out, 16) << r.run.out;
}

TEST(Threads, OneThreadIsOneInstance) {
  const int n = 500;
  Result r = run_with(1, n);
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  expect_each_value_once_in_order(r, n);
  std::set<std::string> instances;
  for (const auto& [p, tags] : r.tags) instances.insert(tags.begin(), tags.end());
  EXPECT_EQ(instances.size(), 1u);
  EXPECT_EQ(r.overlaps, 0);
}

TEST(Threads, AnOutOfRangeThreadCountIsRefusedAtItsLine) {
  auto dir = temp_dir("threads");
  write_file(dir / "p.yaml",
             "plugin.path: [" + kPluginPath + "]\npipelines:\n  - name: t\n    threads: -1\n"
             "    source: { plugin: counter, config: { count: 1 } }\n"
             "    sink: { plugin: discard }\n");
  auto r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("p.yaml:4"), std::string::npos) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("'threads' must be between 0"), std::string::npos) << r.out << r.err;
}

// A task with no records in a batch kept the rejects of its previous batch, and they were
// handled again at every such batch (QA: threads 2 dead-lettered each rejected record 2-4
// times, from copies in memory already reused). Batches of one record: all of partition
// 0 first (task 0), then all of partition 1 (task 1), so each task sits empty for long;
// partition 0's last record (40) is a reject.
TEST(Threads, EachRejectedRecordIsHandledOnceWhenATaskHasNoRecordsInABatch) {
  auto dir = temp_dir("threads-rejects");
  write_file(dir / "p.yaml",
             "plugin.path: [" + kPluginPath + "]\npipelines:\n  - name: t\n    delivery: exactly_once\n"
             "    threads: 2\n"
             "    commit: { max.records: 7, interval: 5s }\n"
             "    errors:\n      policy: dead-letter\n      dead-letter: { plugin: faulty, config: { path: " +
             (dir / "dlq.txt").string() + " } }\n"
             "    source: { plugin: counters, config: { count: 41, batch.size: 1, partitions: 2 } }\n"
             "    transforms: [ { plugin: reject-every, config: { every: 10 } } ]\n"
             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
  RunResult r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto records = [](const fs::path& p) {  // the faulty sink's lines, less its "#pos" ones
    std::multiset<std::string> values;
    for (const auto& l : lines_of(read_file(p)))
      if (!l.empty() && l[0] != '#') values.insert(l);
    return values;
  };
  const auto dead = records(dir / "dlq.txt");
  // 10, 20, 30 and 40 of each partition, once each.
  EXPECT_EQ(dead.size(), 8u) << read_file(dir / "dlq.txt");
  for (const auto& v : dead) EXPECT_EQ(dead.count(v), 1u) << v;
  EXPECT_EQ(records(dir / "out.txt").size(), 74u);
}
