// When rounds commit (engine/round_cadence.hpp), through the real binary and the testkit
// .so: a sink whose commit sleeps, and a counter source that is either live (a batch
// arrives every few ms whether polled or not) or always has its next batch ready.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.hpp"

using namespace exactly::test;

namespace {
const std::string kPluginPath = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

struct Cadence {
  std::vector<int64_t> gaps;  // ms between commit starts, sorted; the last round left out
  int64_t median() const { return gaps[gaps.size() / 2]; }
  std::string text() const {
    std::string all;
    for (auto g : gaps) all += std::to_string(g) + " ";
    return all;
  }
};

// Runs `count` values of the counter (batches of 10, `source_extra` its timing) through a
// sink whose commit takes `commit_ms`, with `interval_ms` commits; every value must come
// out once, in order.
Cadence run_cadence(const std::string& source_extra, int count, int commit_ms, int interval_ms) {
  auto dir = temp_dir("cadence");
  write_file(dir / "p.yaml",
             "plugin.path: [" + kPluginPath + "]\npipelines:\n  - name: t\n    delivery: exactly_once\n" +
                 "    commit: { max.records: 1000000, interval: " + std::to_string(interval_ms) +
                 "ms }\n    source: { plugin: counter, config: { count: " + std::to_string(count) +
                 ", batch.size: 10, " + source_extra + " } }\n" +
                 "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() +
                 ", commit.delay.ms: " + std::to_string(commit_ms) +
                 ", times.path: " + (dir / "times.txt").string() + " } }\n");
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<int64_t> values;
  for (auto& l : lines_of(read_file(dir / "out.txt")))
    if (!l.empty() && l[0] != '#') values.push_back(std::stoll(l));
  EXPECT_EQ(values.size(), static_cast<size_t>(count));
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(values[i], static_cast<int64_t>(i));
    if (values[i] != static_cast<int64_t>(i)) break;
  }
  std::vector<int64_t> starts;
  for (auto& l : lines_of(read_file(dir / "times.txt")))
    if (!l.empty()) starts.push_back(std::stoll(l));
  Cadence c;
  // The last round ends at the end of the input, not on the cadence.
  for (size_t i = 1; i + 1 < starts.size(); ++i) c.gaps.push_back(starts[i] - starts[i - 1]);
  std::sort(c.gaps.begin(), c.gaps.end());
  if (c.gaps.size() < 4) {
    ADD_FAILURE() << "only " << starts.size() << " commits";
    c.gaps.assign(1, -1);
  }
  return c;
}
}  // namespace

TEST(CommitCadence, CommitsStartEveryIntervalNotEveryIntervalPlusACommit) {
  // commit.interval is the time from one commit's start to the next: with 300 ms commits
  // and a 600 ms interval, commits start ~600 ms apart, where they used to start 900 ms
  // apart (a whole interval after each commit ended). A steady input, 10 values every
  // 10 ms for 4 s. Margins both ways: a loaded machine only lengthens gaps.
  Cadence c = run_cadence("poll.pace.ms: 10", 4000, 300, 600);
  EXPECT_LT(c.median(), 780) << "gaps between commit starts, ms: " << c.text();
  EXPECT_GE(c.median(), 580) << "gaps between commit starts, ms: " << c.text();
}

TEST(CommitCadence, ALiveSourceWithNothingReadyCommitsOnTheCadenceAfterASlowCommit) {
  // 400 ms commits, a 600 ms interval: the round after a commit may end 200 ms in, and a
  // live source (10 values every 10 ms) has nothing ready then, so commits start ~600 ms
  // apart. Before, such a round gathered as long as the commit took: 800 ms apart.
  Cadence c = run_cadence("arrive.every.ms: 10", 5000, 400, 600);
  EXPECT_LT(c.median(), 720) << "gaps between commit starts, ms: " << c.text();
  EXPECT_GE(c.median(), 580) << "gaps between commit starts, ms: " << c.text();
}

TEST(CommitCadence, ASourceWithRecordsReadyGathersAsLongAsTheSlowCommitTook) {
  // The same commits and interval, but the source always has its next batch ready (a
  // pipeline catching up): the round goes on for as long as the commit took, so the
  // pipeline spends at least half its time processing. Commits start ~800 ms apart.
  Cadence c = run_cadence("poll.pace.ms: 1", 40000, 400, 600);
  EXPECT_GE(c.median(), 780) << "gaps between commit starts, ms: " << c.text();
  EXPECT_LT(c.median(), 1000) << "gaps between commit starts, ms: " << c.text();
}

TEST(CommitCadence, AfterACommitLongerThanTheIntervalALiveSourceCommitsOnceDrained) {
  // 900 ms commits, a 600 ms interval: what arrived during a commit is committed as soon
  // as it is processed, so commits start ~900 ms apart (each one as long as the commit),
  // not 1,500 (the commit plus a whole interval, as before).
  Cadence c = run_cadence("arrive.every.ms: 10", 6000, 900, 600);
  EXPECT_LT(c.median(), 1150) << "gaps between commit starts, ms: " << c.text();
  EXPECT_GE(c.median(), 890) << "gaps between commit starts, ms: " << c.text();
}
