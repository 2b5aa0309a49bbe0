// The commit protocol and error policies through the real binary and real .so
// plugins: a sink that fails commits (abortable and fatal) must end with every
// value exactly once, in order; record errors follow the configured policy.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "test_util.hpp"

using namespace exactly::test;

namespace {
const std::string kPluginPath = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

struct Output {
  std::vector<int64_t> values;
  int rounds = 0;
};

Output parse_output(const fs::path& p) {
  Output o;
  for (auto& l : lines_of(read_file(p))) {
    if (l.rfind("#pos ", 0) == 0) ++o.rounds;
    else if (!l.empty()) o.values.push_back(std::stoll(l));
  }
  return o;
}

std::string pipeline_yaml(const fs::path& out, int count, const std::string& extra_sink,
                          const std::string& extra_pipeline = "",
                          const std::string& transforms = "") {
  return "plugin.path: [" + kPluginPath + "]\npipelines:\n  - name: t\n    delivery: exactly_once\n" +
         "    commit: { max.records: 512, interval: 5s }\n" + extra_pipeline +
         "    source: { plugin: counter, config: { count: " + std::to_string(count) +
         ", batch.size: 64 } }\n" + transforms + "    sink: { plugin: faulty, config: { path: " +
         out.string() + extra_sink + " } }\n    restart: { backoff.initial: 10ms, backoff.max: 50ms }\n";
}

TEST(CommitProtocol, AbortRewindAndRebuildLoseAndDuplicateNothing) {
  auto dir = temp_dir("commit");
  const int n = 20000;
  write_file(dir / "p.yaml", pipeline_yaml(dir / "out.txt", n,
                                           ", abort.probability: 0.3, fatal.probability: 0.05, seed: 7",
                                           "    errors: { max.consecutive.aborts: 1000 }\n"));
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Output o = parse_output(dir / "out.txt");
  ASSERT_EQ(o.values.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ASSERT_EQ(o.values[i], i) << "at index " << i;
  // The faults really happened: the summary counts aborts and restarts.
  EXPECT_NE(r.err.find("injected abortable error"), std::string::npos);
  EXPECT_NE(r.err.find("injected fatal error"), std::string::npos);
  EXPECT_NE(r.out.find("restarts:"), std::string::npos) << r.out;
  // The summary counts committed records: replays after aborts are not "dropped".
  std::istringstream rows(r.out);
  std::string row;
  bool found = false;
  while (std::getline(rows, row)) {
    std::istringstream f(row);
    std::string name, state;
    long long in = -1, out = -1, dropped = -1;
    if (!(f >> name >> state >> in >> out >> dropped) || name != "t") continue;
    found = true;
    EXPECT_EQ(in, n) << row;
    EXPECT_EQ(out, n) << row;
    EXPECT_EQ(dropped, 0) << row;
  }
  EXPECT_TRUE(found) << r.out;
  EXPECT_NE(r.out.find("replayed: "), std::string::npos) << r.out;
}

TEST(CommitProtocol, ALostPartitionAbortsTheRoundInsteadOfCommittingIt) {
  auto dir = temp_dir("commit");
  const int n = 3000;
  // Rounds end at 512 records (max.records); the partition is lost at 704, mid-round.
  std::string yaml = pipeline_yaml(dir / "out.txt", n, "");
  yaml.replace(yaml.find("batch.size: 64"), 14, "batch.size: 64, lose.at: 700");
  // (Per-batch commits after the re-assignment would end a round at 704 legitimately.)
  yaml.replace(yaml.find("interval: 5s }"), 14, "interval: 5s, after.takeover: 0s }");
  write_file(dir / "p.yaml", yaml);
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Output o = parse_output(dir / "out.txt");
  ASSERT_EQ(o.values.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ASSERT_EQ(o.values[i], i) << "at index " << i;
  // Nothing was committed at the moment of the loss: no round ends at 704.
  EXPECT_EQ(read_file(dir / "out.txt").find("#pos 704\n"), std::string::npos);
  EXPECT_NE(r.err.find("partitions were lost"), std::string::npos) << r.err;
}

TEST(CommitProtocol, ResumesFromPositionsStoredByTheSink) {
  auto dir = temp_dir("commit");
  write_file(dir / "p.yaml", pipeline_yaml(dir / "out.txt", 3000, ""));
  ASSERT_EQ(run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir).exit_code, 0);
  // A second run resumes at the end: nothing new, nothing repeated.
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming from positions stored by the sink"), std::string::npos) << r.err;
  EXPECT_EQ(parse_output(dir / "out.txt").values.size(), 3000u);
}

TEST(CommitProtocol, AfterATakeoverEachBatchCommitsAtOnce) {
  // A takeover's first output must not wait out commit.interval: for commit.after.takeover
  // after the source is given partitions again, every batch ends its round. The counter
  // loses its partition at 300 (the round is aborted) and is assigned it again from 0;
  // then 1,000 values in 64-record batches. With interval 5s and max.records 512 the
  // rounds would otherwise be 2 (576 + 424 records).
  auto dir = temp_dir("commit");
  std::string yaml = pipeline_yaml(dir / "out.txt", 1000, "");
  yaml.replace(yaml.find("batch.size: 64"), 14, "batch.size: 64, lose.at: 300");
  write_file(dir / "p.yaml", yaml);
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Output o = parse_output(dir / "out.txt");
  ASSERT_EQ(o.values.size(), 1000u);
  EXPECT_EQ(o.rounds, (1000 + 63) / 64);
  // Off: the same run commits in rounds of commit.max.records again.
  auto dir2 = temp_dir("commit");
  yaml = pipeline_yaml(dir2 / "out.txt", 1000, "");
  yaml.replace(yaml.find("batch.size: 64"), 14, "batch.size: 64, lose.at: 300");
  yaml.replace(yaml.find("interval: 5s }"), 14, "interval: 5s, after.takeover: 0s }");
  write_file(dir2 / "p.yaml", yaml);
  r = run(exactly_bin() + " run " + (dir2 / "p.yaml").string(), dir2);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse_output(dir2 / "out.txt").rounds, 2);
}

TEST(CommitProtocol, ALullInTheInputCommitsTheRoundWithoutWaitingForTheInterval) {
  // The counter finds nothing for 1.5 s once past 500 (its polls wait out their timeout),
  // then goes on to 1,000. With interval 60s and max.records 100000 the round would run
  // to the end; commit.when.idle (the default) ends it at the lull: 512 + 488.
  auto run_with = [](const std::string& when_idle) {
    auto dir = temp_dir("commit");
    std::string yaml = pipeline_yaml(dir / "out.txt", 1000, "");
    yaml.replace(yaml.find("batch.size: 64"), 14, "batch.size: 64, pause.at: 500, pause.ms: 1500");
    yaml.replace(yaml.find("{ max.records: 512, interval: 5s }"), 34,
                 "{ max.records: 100000, interval: 60s" + when_idle + " }");
    write_file(dir / "p.yaml", yaml);
    auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    Output o = parse_output(dir / "out.txt");
    EXPECT_EQ(o.values.size(), 1000u);
    for (size_t i = 0; i < o.values.size(); ++i) EXPECT_EQ(o.values[i], static_cast<int64_t>(i));
    return o.rounds;
  };
  EXPECT_EQ(run_with(""), 2);
  // Off: one round, to the end of the input.
  EXPECT_EQ(run_with(", when.idle: false"), 1);
}

TEST(CommitProtocol, CommitsStartEveryIntervalNotEveryIntervalPlusACommit) {
  // commit.interval is the time from one commit's start to the next: with 300 ms commits
  // and a 600 ms interval, commits start ~600 ms apart (the round after a commit gathers
  // for the rest of the interval, and at least as long as that commit took), where they
  // used to start 900 ms apart (a whole interval after each commit ended). A steady input:
  // 10 values every 10 ms for 4 s.
  auto dir = temp_dir("commit");
  std::string yaml = pipeline_yaml(dir / "out.txt", 4000,
                                   ", commit.delay.ms: 300, times.path: " + (dir / "times.txt").string());
  yaml.replace(yaml.find("batch.size: 64"), 14, "batch.size: 10, poll.pace.ms: 10");
  yaml.replace(yaml.find("{ max.records: 512, interval: 5s }"), 34,
               "{ max.records: 100000, interval: 600ms }");
  write_file(dir / "p.yaml", yaml);
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Output o = parse_output(dir / "out.txt");
  ASSERT_EQ(o.values.size(), 4000u);
  for (size_t i = 0; i < o.values.size(); ++i) ASSERT_EQ(o.values[i], static_cast<int64_t>(i));
  std::vector<int64_t> starts;
  for (auto& l : lines_of(read_file(dir / "times.txt")))
    if (!l.empty()) starts.push_back(std::stoll(l));
  // The last round ends at the end of the input, not on the cadence.
  ASSERT_GE(starts.size(), 5u) << "commits: " << starts.size();
  std::vector<int64_t> gaps;
  for (size_t i = 1; i + 1 < starts.size(); ++i) gaps.push_back(starts[i] - starts[i - 1]);
  std::sort(gaps.begin(), gaps.end());
  const int64_t median = gaps[gaps.size() / 2];
  std::string all;
  for (auto g : gaps) all += std::to_string(g) + " ";
  // Margins both ways: a loaded machine only lengthens gaps, and 900 is the old cadence.
  EXPECT_LT(median, 780) << "gaps between commit starts, ms: " << all;
  EXPECT_GE(median, 580) << "gaps between commit starts, ms: " << all;
}

// Median gap between commit starts (ms) of a steady 4 s input (10 values every 10 ms)
// whose records are stamped `age_ms` before their poll, with a 2 s interval.
int64_t median_commit_gap(const std::string& tag, int64_t age_ms) {
  auto dir = temp_dir(tag);
  std::string yaml = pipeline_yaml(dir / "out.txt", 4000, ", times.path: " + (dir / "times.txt").string());
  yaml.replace(yaml.find("batch.size: 64"), 14,
               "batch.size: 10, poll.pace.ms: 10, timestamp.age.ms: " + std::to_string(age_ms));
  yaml.replace(yaml.find("{ max.records: 512, interval: 5s }"), 34,
               "{ max.records: 100000, interval: 2s }");
  write_file(dir / "p.yaml", yaml);
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse_output(dir / "out.txt").values.size(), 4000u);
  std::vector<int64_t> starts;
  for (auto& l : lines_of(read_file(dir / "times.txt")))
    if (!l.empty()) starts.push_back(std::stoll(l));
  if (starts.size() < 3) return -static_cast<int64_t>(starts.size());
  std::vector<int64_t> gaps;  // the last round ends at the end of the input, not on a cadence
  for (size_t i = 1; i + 1 < starts.size(); ++i) gaps.push_back(starts[i] - starts[i - 1]);
  std::sort(gaps.begin(), gaps.end());
  return gaps[gaps.size() / 2];
}

TEST(CommitProtocol, ARoundOfLateInputEndsOnceItsOldestRecordHasWaitedTheInterval) {
  // Records 3 s old when polled (input late after a stall upstream: past the 2 s interval,
  // not yet a backlog's 4 s): the round ends at its shortest, a quarter of the interval.
  const int64_t late = median_commit_gap("commit-late", 3000);
  EXPECT_GE(late, 400) << "shorter than a quarter interval";
  EXPECT_LT(late, 1200) << "late input waited for the whole interval";
  // Fresh records keep the cadence: they reach the interval's age about when it ends.
  const int64_t fresh = median_commit_gap("commit-fresh", 0);
  EXPECT_GE(fresh, 1600) << "fresh input cut the rounds short";
}

TEST(CommitProtocol, ABacklogKeepsTheCadenceInsteadOfEndingRoundsEarly) {
  // Records an hour old when polled (a restart's catch-up, a replay): every record is
  // late, and short rounds would only add commits; the rounds keep the 2 s cadence.
  const int64_t backlog = median_commit_gap("commit-backlog", 3600 * 1000);
  EXPECT_GE(backlog, 1600) << "a backlog's rounds were cut short";
}

TEST(ErrorPolicy, StopNamesTheRecordOriginAndCommitsNothingOfTheRound) {
  auto dir = temp_dir("policy");
  write_file(dir / "p.yaml",
             pipeline_yaml(dir / "out.txt", 1000, "", "",
                           "    transforms: [ { plugin: reject-every, config: { every: 700 } } ]\n"));
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("record at counter-0@700 rejected by transforms[0]/reject-every: value 700 "
                       "is a multiple of 700 (errors.policy: stop)"),
            std::string::npos)
      << r.out;
  
  Output o = parse_output(dir / "out.txt");
  EXPECT_EQ(o.values.size(), 512u);  // rounds of 512: the first committed, the second not
}

TEST(ErrorPolicy, SkipCountsAndContinues) {
  auto dir = temp_dir("policy");
  write_file(dir / "p.yaml",
             pipeline_yaml(dir / "out.txt", 1000, "", "    errors: { policy: skip }\n",
                           "    transforms: [ { plugin: reject-every, config: { every: 10 } } ]\n"));
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Output o = parse_output(dir / "out.txt");
  EXPECT_EQ(o.values.size(), 901u);  // 0 is kept: only positive multiples are rejected
  for (auto v : o.values) EXPECT_TRUE(v == 0 || v % 10 != 0);
  EXPECT_NE(r.out.find(" 901 "), std::string::npos) << r.out;
}

TEST(ErrorPolicy, DeadLetterGetsEveryRejectedRecord) {
  auto dir = temp_dir("policy");
  std::string dlq = "    errors:\n      policy: dead-letter\n      dead-letter: { plugin: faulty, "
                    "config: { path: " + (dir / "dlq.txt").string() + " } }\n";
  write_file(dir / "p.yaml",
             pipeline_yaml(dir / "out.txt", 1000, "", dlq,
                           "    transforms: [ { plugin: reject-every, config: { every: 10 } } ]\n"));
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Output o = parse_output(dir / "out.txt");
  Output d = parse_output(dir / "dlq.txt");
  EXPECT_EQ(o.values.size(), 901u);
  ASSERT_EQ(d.values.size(), 99u);
  for (auto v : d.values) EXPECT_EQ(v % 10, 0);
  // The summary counts each sink's commits on its own line, not one sum of both.
  std::map<std::string, long> commits;
  std::istringstream rows(r.out);
  for (std::string row; std::getline(rows, row);) {
    std::istringstream f(row);
    std::string metric, stage;
    long v = 0;
    if (f >> metric >> stage >> v && metric == "testkit_commits_total") commits[stage] = v;
  }
  ASSERT_EQ(commits.size(), 2u) << r.out;
  EXPECT_GE(commits["(sink/faulty)"], 2) << r.out;
  EXPECT_GE(commits["(errors.dead-letter/faulty)"], 1) << r.out;
  EXPECT_EQ(commits["(sink/faulty)"], parse_output(dir / "out.txt").rounds) << r.out;
}

// The README's dead-letter sink: a file with format: json, through the real binary and
// the real file plugin. Each dead letter is a line of JSON with the record and the
// headers that say why and from where.
TEST(ErrorPolicy, AFileDeadLetterSinkWithFormatJsonKeepsWhy) {
  auto dir = temp_dir("policy");
  const std::string plugins = std::string(EXACTLY_BUILD_DIR) + "/plugins";
  std::string dlq = "    errors:\n      policy: dead-letter\n      dead-letter: { plugin: file, "
                    "config: { path: " + (dir / "dlq.jsonl").string() + ", format: json } }\n";
  std::string yaml = pipeline_yaml(dir / "out.txt", 100, "", dlq,
                                   "    transforms: [ { plugin: reject-every, config: { every: 10 } } ]\n");
  yaml.replace(0, yaml.find('\n'), "plugin.path: [" + kPluginPath + ", " + plugins + "]");
  write_file(dir / "p.yaml", yaml);
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(read_file(dir / "dlq.jsonl"));
  ASSERT_EQ(lines.size(), 9u) << read_file(dir / "dlq.jsonl");
  EXPECT_EQ(lines[0].rfind("{\"key\":", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("\"value\":\"10\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("[\"exactly.error\",\"value 10 is a multiple of 10\"]"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("[\"exactly.stage\",\"transforms[0]/reject-every\"]"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("[\"exactly.origin\",\"counter-0@10\"]"), std::string::npos) << lines[0];
}

// A record that arrives with exactly.* headers of its own (a dead letter sent through a
// pipeline again) and is rejected again: each of the four headers once, the new
// failure's (QA: the old exactly.origin came first and pointed at another record).
TEST(ErrorPolicy, ADeadLetterRejectedAgainCarriesTheNewFailuresHeadersOnce) {
  auto dir = temp_dir("policy");
  const std::string plugins = std::string(EXACTLY_BUILD_DIR) + "/plugins";
  std::string dlq = "    errors:\n      policy: dead-letter\n      dead-letter: { plugin: file, "
                    "config: { path: " + (dir / "dlq.jsonl").string() + ", format: json } }\n";
  std::string yaml = pipeline_yaml(
      dir / "out.txt", 30, "", dlq,
      "    transforms:\n"
      "      - { plugin: add-header, config: { name: exactly.origin, value: old-topic-9@1000 } }\n"
      "      - { plugin: add-header, config: { name: exactly.error, value: an older failure } }\n"
      "      - { plugin: add-header, config: { name: app, value: kept } }\n"
      "      - { plugin: reject-every, config: { every: 10 } }\n");
  yaml.replace(0, yaml.find('\n'), "plugin.path: [" + kPluginPath + ", " + plugins + "]");
  write_file(dir / "p.yaml", yaml);
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(read_file(dir / "dlq.jsonl"));
  ASSERT_EQ(lines.size(), 2u) << read_file(dir / "dlq.jsonl");
  for (const auto& line : lines) {
    EXPECT_EQ(count_of(line, "\"exactly.origin\""), 1) << line;
    EXPECT_EQ(count_of(line, "\"exactly.error\""), 1) << line;
    EXPECT_EQ(line.find("old-topic-9@1000"), std::string::npos) << line;
    EXPECT_EQ(line.find("an older failure"), std::string::npos) << line;
    EXPECT_NE(line.find("[\"app\",\"kept\"]"), std::string::npos) << line;  // other headers stay
  }
  EXPECT_NE(lines[0].find("[\"exactly.origin\",\"counter-0@10\"]"), std::string::npos) << lines[0];
}

// A record the dead-letter sink refuses has nowhere left to go: the pipeline stops
// without committing it, and says which record it was and why.
TEST(ErrorPolicy, ARecordTheDeadLetterSinkRefusesStopsThePipelineAndIsNamed) {
  auto dir = temp_dir("policy");
  std::string dlq = "    errors:\n      policy: dead-letter\n      dead-letter: { plugin: faulty, "
                    "config: { path: " + (dir / "dlq.txt").string() + ", refuse.value: 30 } }\n";
  write_file(dir / "p.yaml",
             pipeline_yaml(dir / "out.txt", 1000, "", dlq,
                           "    transforms: [ { plugin: reject-every, config: { every: 10 } } ]\n"));
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the dead-letter sink rejected 1 record(s), the first counter-0@30: value 30 "
                       "is refused by this sink; stopping rather than losing them"),
            std::string::npos)
      << r.err;
  // Nothing of the round that held it was committed (rounds are 512 records).
  EXPECT_TRUE(parse_output(dir / "out.txt").values.empty()) << read_file(dir / "out.txt");
}

// A plugin's reject reason is its own bytes: a null one (with a length) threw inside the
// host's callback and aborted the host; a 5 MB one made a 5 MB log line and a dead letter
// the broker refused (QA). Both go to the dead-letter sink with a reason the host made.
TEST(ErrorPolicy, ANullOrHugeRejectReasonIsSaidAndBounded) {
  for (const std::string reason : {"reason.null: true", "reason.bytes: 5000000"}) {
    auto dir = temp_dir("policy");
    std::string dlq = "    errors:\n      policy: dead-letter\n      dead-letter: { plugin: faulty, "
                      "config: { path: " + (dir / "dlq.txt").string() + " } }\n";
    write_file(dir / "p.yaml",
               pipeline_yaml(dir / "out.txt", 100, "", dlq,
                             "    transforms: [ { plugin: reject-every, config: { every: 10, " + reason +
                                 " } } ]\n"));
    auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
    ASSERT_EQ(r.exit_code, 0) << reason << "\n" << r.err.substr(0, 3000);
    EXPECT_EQ(parse_output(dir / "dlq.txt").values.size(), 9u) << reason;  // 10..90
    EXPECT_EQ(parse_output(dir / "out.txt").values.size(), 91u) << reason;
    size_t longest = 0;
    for (const auto& line : lines_of(r.err)) longest = std::max(longest, line.size());
    EXPECT_LT(longest, 8192u) << reason;
    if (reason == "reason.null: true")
      EXPECT_NE(r.err.find("rejected by transforms[0]/reject-every: (no reason given: the plugin passed a null reason)"),
                std::string::npos)
          << r.err;
    else
      EXPECT_NE(r.err.find("rrrr... (5000000 bytes; cut at 4096)"), std::string::npos) << r.err.substr(0, 3000);
  }
}

TEST(CommitProtocol, ExactlyOnceRefusesASinkThatCannotStorePositions) {
  auto dir = temp_dir("eos");
  write_file(dir / "p.yaml", "plugin.path: [" + kPluginPath + "]\npipelines:\n  - name: t\n"
                             "    delivery: exactly_once\n"
                             "    source: { plugin: counter }\n    sink: { plugin: discard }\n");
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("cannot store the source's positions"), std::string::npos) << r.out;
}

TEST(Shutdown, SigtermCommitsTheRunningRound) {
  auto dir = temp_dir("sigterm");
  // Unbounded enough to be still running when the signal comes.
  write_file(dir / "p.yaml", pipeline_yaml(dir / "out.txt", 50000000, ""));
  Child c({exactly_bin(), "run", (dir / "p.yaml").string()}, dir / "log.txt");
  // Wait until some rounds are committed.
  for (int i = 0; i < 200 && parse_output(dir / "out.txt").rounds < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  c.kill(SIGTERM);
  EXPECT_EQ(c.wait(), 0) << read_file(dir / "log.txt");
  Output o = parse_output(dir / "out.txt");
  ASSERT_GT(o.values.size(), 0u);
  for (size_t i = 0; i < o.values.size(); ++i) ASSERT_EQ(o.values[i], static_cast<int64_t>(i));
  EXPECT_NE(read_file(dir / "log.txt").find("finishing and committing"), std::string::npos);
}

TEST(Shutdown, ASecondSignalWhileThePipelinesCloseExitsAt130) {
  auto dir = temp_dir("sigterm");
  // The sink takes 3 s to close: the second SIGTERM lands while the host tears down.
  write_file(dir / "p.yaml", pipeline_yaml(dir / "out.txt", 50000000, ", close.delay.ms: 3000"));
  Child c({exactly_bin(), "run", (dir / "p.yaml").string()}, dir / "log.txt");
  for (int i = 0; i < 200 && parse_output(dir / "out.txt").rounds < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  c.kill(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  c.kill(SIGTERM);
  EXPECT_EQ(c.wait(), 130) << read_file(dir / "log.txt");
  EXPECT_NE(read_file(dir / "log.txt").find("second signal"), std::string::npos) << read_file(dir / "log.txt");
}

}  // namespace

// A stop signal that lands while a reload drains a changed pipeline (here: its sink
// takes 3 s to close) stops the host: the reload starts no new instance of it.
TEST(Shutdown, ASignalDuringAReloadsDrainStopsTheHostAndStartsNothing) {
  auto dir = temp_dir("sigterm-reload");
  const fs::path conf = dir / "p.yaml", log = dir / "log.txt";
  write_file(conf, pipeline_yaml(dir / "out.txt", 50000000, ", close.delay.ms: 3000"));
  Child c({exactly_bin(), "run", conf.string()}, log);
  for (int i = 0; i < 200 && parse_output(dir / "out.txt").rounds < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GE(parse_output(dir / "out.txt").rounds, 2) << read_file(log);
  // Another commit interval cannot change in place: the reload drains and restarts it.
  std::string next = read_file(conf);
  next.replace(next.find("interval: 5s"), 12, "interval: 4s");
  write_file(conf, next);
  for (int i = 0; i < 200 && read_file(log).find("valid; applying") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_NE(read_file(log).find("valid; applying"), std::string::npos) << read_file(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // inside the 3 s close
  c.kill(SIGTERM);
  EXPECT_EQ(c.wait(), 0) << read_file(log);
  const std::string text = read_file(log);
  EXPECT_NE(text.find("interrupted by a stop signal"), std::string::npos) << text;
  EXPECT_EQ(text.find("applied:"), std::string::npos) << text;
  EXPECT_EQ(count_of(text, "running (counter"), 1) << text;
  Output o = parse_output(dir / "out.txt");
  for (size_t i = 0; i < o.values.size(); ++i) ASSERT_EQ(o.values[i], static_cast<int64_t>(i));
}

// Raw-ABI plugins (tests/host/fixtures/raw_misuse_plugin.cpp) that hand the host a null
// where a record is due: a transform's emit(NULL), a source's poll() with records and no
// array. The host dereferenced them and crashed, its report blaming the host (QA); now
// the round fails naming the stage, and the pipeline restarts as for any plugin failure.
TEST(ErrorPolicy, ANullRecordFromAPluginFailsTheRoundByName) {
  struct Case {
    std::string source, transforms, want;
  };
  const std::vector<Case> cases = {
      {"counter, config: { count: 50000000, batch.size: 64 }", "    transforms: [ { plugin: emit-null } ]\n",
       "transforms[0]/emit-null: emit() was given a null record: the plugin's bug"},
      {"null-records", "", "poll() returned 3 record(s) and no records (a null array): the plugin's bug"}};
  for (const auto& k : cases) {
    auto dir = temp_dir("null-record");
    write_file(dir / "p.yaml", "plugin.path: [" + kPluginPath + "]\npipelines:\n  - name: t\n"
                               "    source: { plugin: " + k.source + " }\n" + k.transforms +
                               "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n"
                               "    restart: { backoff.initial: 10ms, backoff.max: 50ms }\n");
    Child c({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "log.txt");
    for (int i = 0; i < 200 && read_file(dir / "log.txt").find(k.want) == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    c.kill(SIGTERM);
    EXPECT_EQ(c.wait(), 0) << read_file(dir / "log.txt");
    EXPECT_NE(read_file(dir / "log.txt").find(k.want), std::string::npos) << read_file(dir / "log.txt");
    EXPECT_TRUE(parse_output(dir / "out.txt").values.empty()) << k.source;
  }
}

// The same bug in a sink's write(): its reject(index past the batch) was ignored, and the
// round committed with the record neither written nor handed to the error policy.
TEST(ErrorPolicy, ASinkRejectPastTheBatchFailsTheRoundByName) {
  auto dir = temp_dir("bad-index");
  write_file(dir / "p.yaml",
             pipeline_yaml(dir / "out.txt", 50000000, ", refuse.value: 10, refuse.bad.index: true"));
  Child c({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "log.txt");
  const std::string want = "sink/faulty: a record index out of the batch (reject(";
  for (int i = 0; i < 200 && read_file(dir / "log.txt").find(want) == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  c.kill(SIGTERM);
  c.wait();
  EXPECT_NE(read_file(dir / "log.txt").find(want), std::string::npos) << read_file(dir / "log.txt");
  EXPECT_TRUE(parse_output(dir / "out.txt").values.empty());
}

// A transform that keeps or rejects a record by an index past its batch (a plugin bug the
// SDK's void keep()/reject() cannot report) fails the batch, naming the stage and the
// call, instead of losing the record silently; nothing of the round is committed.
TEST(ErrorPolicy, AKeepOrRejectPastTheBatchFailsTheRoundByName) {
  for (const std::string call : {"keep", "reject"}) {
    auto dir = temp_dir("bad-index");
    write_file(dir / "p.yaml",
               pipeline_yaml(dir / "out.txt", 50000000, "", "",
                             "    transforms: [ { plugin: bad-index, config: { at: 10, call: " + call + " } } ]\n"));
    Child c({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "log.txt");
    const std::string want = "transforms[0]/bad-index: a record index out of the batch (" + call +
                             "(1064) on a batch of 64 record(s))";
    for (int i = 0; i < 200 && read_file(dir / "log.txt").find(want) == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    c.kill(SIGTERM);
    c.wait();
    EXPECT_NE(read_file(dir / "log.txt").find(want), std::string::npos) << read_file(dir / "log.txt");
    EXPECT_TRUE(parse_output(dir / "out.txt").values.empty()) << call;
  }
}
