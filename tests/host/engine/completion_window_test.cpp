// ABI 1.4 ordered completion window through the real binary and real .so plugins: a sink
// that completes records out of order (testkit `window`) holds each partition's committed
// position at its lowest open record while later batches and other partitions go on; a
// restart replays only from there; a record that fails after write() returned reaches
// the error policy; a source without checkpoint_at makes the host wait for the window at
// every commit instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <csignal>
#include <sstream>
#include <thread>

#include "test_util.hpp"

using namespace exactly::test;

namespace {
const std::string kPluginPath = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

std::string yaml(const fs::path& dir, const std::string& out, const std::string& sink_extra,
                 const std::string& pipeline_extra = "", const std::string& source = "") {
  std::string src = source.empty() ? "{ plugin: counters, config: { count: 400, batch.size: 20, "
                                     "partitions: 2, commits.file: " + (dir / "commits.txt").string() + " } }"
                                   : source;
  return "plugin.path: [" + kPluginPath + "]\npipelines:\n  - name: t\n    delivery: at_least_once\n"
         "    commit: { max.records: 40, interval: 30s }\n" + pipeline_extra +
         "    source: " + src + "\n"
         "    sink: { plugin: window, config: { path: " + (dir / out).string() + sink_extra + " } }\n"
         "    restart: { backoff.initial: 10ms, backoff.max: 50ms }\n";
}

// Committed positions, one pair (partition 0, partition 1) per commit.
std::vector<std::pair<int64_t, int64_t>> commits(const fs::path& p) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (auto& l : lines_of(read_file(p))) {
    if (l.empty()) continue;
    auto comma = l.find(',');
    out.emplace_back(std::stoll(l.substr(0, comma)), std::stoll(l.substr(comma + 1)));
  }
  return out;
}

// Completed values "<p>:<offset>" -> how often.
std::map<std::string, int> values(const fs::path& p) {
  std::map<std::string, int> out;
  for (auto& l : lines_of(read_file(p)))
    if (!l.empty()) ++out[l];
  return out;
}

std::set<std::string> range(int p, int64_t from, int64_t to) {
  std::set<std::string> out;
  for (int64_t i = from; i < to; ++i) out.insert(std::to_string(p) + ":" + std::to_string(i));
  return out;
}

std::set<std::string> of_partition(const std::map<std::string, int>& v, int p) {
  std::set<std::string> out;
  for (auto& [k, n] : v)
    if (k.rfind(std::to_string(p) + ":", 0) == 0) out.insert(k);
  return out;
}

}  // namespace

TEST(CompletionWindow, CommittedPositionStopsAtTheLowestOpenRecordWhileLaterBatchesGoOn) {
  auto dir = temp_dir("window");
  // 0:37 stays open for the first 6 completed() calls (one per commit).
  write_file(dir / "p.yaml", yaml(dir, "out.txt", ", stuck: \"0:37\", stuck.calls: 6"));
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto c = commits(dir / "commits.txt");
  ASSERT_GE(c.size(), 6u) << read_file(dir / "commits.txt");
  // Rounds of 40 records (20 per partition); 0:37 is read in the second round.
  EXPECT_EQ(c[0], std::make_pair(int64_t{20}, int64_t{20}));
  for (size_t i = 1; i <= 5; ++i) {
    // Partition 0 waits at its open record; partition 1 and later batches do not.
    EXPECT_EQ(c[i].first, 37) << "commit " << i;
    EXPECT_EQ(c[i].second, static_cast<int64_t>(20 * (i + 1))) << "commit " << i;
  }
  EXPECT_EQ(c[6], std::make_pair(int64_t{140}, int64_t{140}));  // 0:37 completed
  for (size_t i = 1; i < c.size(); ++i) EXPECT_GE(c[i].first, c[i - 1].first);
  EXPECT_EQ(c.back(), std::make_pair(int64_t{400}, int64_t{400}));
  auto v = values(dir / "out.txt");
  EXPECT_EQ(v.size(), 800u);
  for (auto& [k, n] : v) EXPECT_EQ(n, 1) << k;
}

TEST(CompletionWindow, ARestartReplaysOnlyFromTheLowestOpenRecord) {
  auto dir = temp_dir("window");
  // 0:37 never completes; the 8th completed() call kills the host before that commit.
  write_file(dir / "p1.yaml", yaml(dir, "out1.txt", ", stuck: \"0:37\", kill.at.call: 8"));
  auto r1 = run(exactly_bin() + " run " + (dir / "p1.yaml").string(), dir);
  ASSERT_TRUE(r1.exit_code != 0 || r1.signal != 0) << r1.err;
  auto c = commits(dir / "commits.txt");
  ASSERT_EQ(c.size(), 7u) << read_file(dir / "commits.txt");
  ASSERT_EQ(c.back(), std::make_pair(int64_t{37}, int64_t{140}));
  auto first = values(dir / "out1.txt");
  // Completed in the first run past the committed positions: they will come again.
  EXPECT_TRUE(first.count("0:38") == 1 && first.count("1:139") == 1);

  write_file(dir / "p2.yaml", yaml(dir, "out2.txt", ""));
  auto r2 = run(exactly_bin() + " run " + (dir / "p2.yaml").string(), dir);
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  auto second = values(dir / "out2.txt");
  // Exactly what was not committed, each once: from the open record on partition 0, from
  // the committed position on partition 1.
  EXPECT_EQ(of_partition(second, 0), range(0, 37, 400));
  EXPECT_EQ(of_partition(second, 1), range(1, 140, 400));
  for (auto& [k, n] : second) EXPECT_EQ(n, 1) << k;
  for (int p = 0; p < 2; ++p)
    for (const auto& k : range(p, 0, 400))
      EXPECT_TRUE(first.count(k) || second.count(k)) << k << " never completed";
}

TEST(CompletionWindow, ALateFailureGoesToTheDeadLetterSinkAndNeverIsLost) {
  auto dir = temp_dir("window");
  std::string dlq = "    errors:\n      policy: dead-letter\n      dead-letter: { plugin: faulty, "
                    "config: { path: " + (dir / "dlq.txt").string() + " } }\n";
  write_file(dir / "p.yaml", yaml(dir, "out.txt", ", fail: \"0:7\"", dlq));
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto v = values(dir / "out.txt");
  EXPECT_EQ(v.size(), 799u);
  EXPECT_EQ(v.count("0:7"), 0u);
  std::string d = read_file(dir / "dlq.txt");
  EXPECT_NE(d.find("0:7\n"), std::string::npos) << d;
  EXPECT_EQ(d.find("0:7\n"), d.rfind("0:7\n")) << d;
}

TEST(CompletionWindow, ALateFailureUnderPolicyStopNeverCommitsPastTheRecord) {
  auto dir = temp_dir("window");
  write_file(dir / "p.yaml", yaml(dir, "out.txt", ", fail: \"0:27\"", "    errors: { policy: stop }\n"));
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_NE(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("failed late: 0:27"), std::string::npos) << r.err;
  for (auto [p0, p1] : commits(dir / "commits.txt")) EXPECT_LE(p0, 27);
}

TEST(CompletionWindow, ASourceWithoutCheckpointAtMakesTheHostWaitForTheWindow) {
  auto dir = temp_dir("window");
  // `counter` has no checkpoint_at: every commit waits until nothing is open.
  write_file(dir / "p.yaml", yaml(dir, "out.txt", ", stuck: \"0:5\", stuck.calls: 3", "",
                                  "{ plugin: counter, config: { count: 300, batch.size: 20 } }"));
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto v = values(dir / "out.txt");
  EXPECT_EQ(v.size(), 300u);
  // The stuck record was waited for inside the first commit: it completed before any
  // value of the next round was written.
  auto lines = lines_of(read_file(dir / "out.txt"));
  auto pos = std::find(lines.begin(), lines.end(), "5");
  ASSERT_NE(pos, lines.end());
  EXPECT_LT(pos - lines.begin(), 40);
}

// A sink built for ABI 1.0 (no `completed`; the fixture leaves garbage where it would be)
// behind a source that has checkpoint_at: the host commits the scan positions as before.
TEST(CompletionWindow, ASinkOfAnOlderMinorCommitsAsBefore) {
  auto dir = temp_dir("window");
  std::string y = yaml(dir, "out.txt", "");
  y.replace(y.find("{ plugin: window"), y.find("\n", y.find("{ plugin: window")) - y.find("{ plugin: window"),
            "{ plugin: old_sink }");
  write_file(dir / "p.yaml", y);
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto c = commits(dir / "commits.txt");
  ASSERT_EQ(c.size(), 20u) << read_file(dir / "commits.txt");
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_EQ(c[i], std::make_pair(static_cast<int64_t>(20 * (i + 1)), static_cast<int64_t>(20 * (i + 1))));
}

// A revocation while a record of the revoked partition is still open: the host commits
// the round with that partition at its open record, the sink drops what is open of it,
// and the partition (assigned again at its committed position, as a new owner would
// resume) sends the open record again: nothing before it is repeated, nothing is lost.
TEST(CompletionWindow, ARevokedPartitionResumesAtItsOpenRecord) {
  auto dir = temp_dir("window");
  std::string src = "{ plugin: counters, config: { count: 400, batch.size: 20, partitions: 2, "
                    "revoke.at: 100, commits.file: " + (dir / "commits.txt").string() + " } }";
  write_file(dir / "p.yaml", yaml(dir, "out.txt", ", stuck: \"1:45\"", "", src));
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("revoked counters-1"), std::string::npos) << r.err;
  auto c = commits(dir / "commits.txt");
  // The commit made inside the revocation: partition 1 at its open record.
  bool at_open = false;
  for (auto [p0, p1] : c) at_open = at_open || (p0 >= 100 && p1 == 45);
  EXPECT_TRUE(at_open) << read_file(dir / "commits.txt");
  EXPECT_EQ(c.back(), std::make_pair(int64_t{400}, int64_t{400}));
  auto v = values(dir / "out.txt");
  for (int p = 0; p < 2; ++p)
    for (const auto& k : range(p, 0, 400)) EXPECT_TRUE(v.count(k)) << k << " lost";
  // Before the open record: completed and committed, never sent again.
  for (const auto& k : range(1, 0, 45)) EXPECT_EQ(v[k], 1) << k;
  // The open record was dropped at the revocation and completed once, from the replay.
  EXPECT_EQ(v["1:45"], 1);
  // Partition 0 was never revoked: nothing of it repeated.
  for (const auto& k : range(0, 0, 400)) EXPECT_EQ(v[k], 1) << k;
}

// An aborted round while a record is open: the sink drops everything in flight and the
// host rewinds to the last committed positions, which are at or before every open record:
// the open record is sent again and completes, nothing is lost.
TEST(CompletionWindow, AnAbortRewindsToTheCommittedOpenRecord) {
  auto dir = temp_dir("window");
  // 0:37 is open from the second commit on; the fourth commit fails.
  write_file(dir / "p.yaml", yaml(dir, "out.txt", ", stuck: \"0:37\", abort.at.commit: 4"));
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("injected abortable error at commit"), std::string::npos) << r.err;
  auto c = commits(dir / "commits.txt");
  ASSERT_GE(c.size(), 3u);
  EXPECT_EQ(c[2].first, 37);  // the last commit before the abort held partition 0 there
  for (size_t i = 1; i < c.size(); ++i) EXPECT_GE(c[i].first, c[i - 1].first);
  EXPECT_EQ(c.back(), std::make_pair(int64_t{400}, int64_t{400}));
  auto v = values(dir / "out.txt");
  for (int p = 0; p < 2; ++p)
    for (const auto& k : range(p, 0, 400)) EXPECT_TRUE(v.count(k)) << k << " lost";
  // Committed before the abort: not sent again.
  for (const auto& k : range(0, 0, 37)) EXPECT_EQ(v[k], 1) << k;
  EXPECT_EQ(v["0:37"], 1);  // dropped by the abort while open; completed from the replay
}

// A record the sink never completes held the end of a bounded input in silence: every
// call returned, so no stage.timeout warning came, and /readyz said ready (QA). It is
// said after stage.timeout, naming the sink, the partition and the offset, and again
// every stage.timeout while it stays; a stop still ends the wait.
TEST(CompletionWindow, ARecordInFlightLongerThanTheStageTimeoutIsSaid) {
  auto dir = temp_dir("window");
  write_file(dir / "p.yaml", "stage.timeout: 1s\n" + yaml(dir, "out.txt", ", stuck: \"0:37\""));
  const fs::path log = dir / "run.log";
  Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, log);
  const std::string want = "has had the record at offset 37 of counters-0 in flight for";
  int said = 0;
  for (int i = 0; i < 100 && said < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::string text = read_file(log);
    said = 0;
    for (size_t at = text.find(want); at != std::string::npos; at = text.find(want, at + 1)) ++said;
  }
  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0) << read_file(log);
  const std::string text = read_file(log);
  EXPECT_GE(said, 2) << text;
  EXPECT_NE(text.find("the pipeline waits for it before it commits"), std::string::npos) << text;
}
