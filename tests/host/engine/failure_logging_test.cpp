// A pipeline that fails for good at create/open says so on stderr with the reason (not
// only in the final summary and as exactly_pipeline_up 0): issue "hardening".
#include <gtest/gtest.h>

#include "test_util.hpp"

#include <chrono>
#include <csignal>
#include <thread>

using namespace exactly::test;

namespace {

std::string test_plugins() { return std::string(EXACTLY_BUILD_DIR) + "/test-plugins"; }

// dir/p.yaml: one pipeline from the testkit counter (`source_config`) through
// `transforms` (a YAML flow list; none if empty) into the faulty sink's dir/out.txt.
fs::path counter_pipeline(const fs::path& dir, const std::string& name,
                          const std::string& source_config, const std::string& transforms) {
  write_file(dir / "p.yaml",
             "plugin.path: [" + test_plugins() + "]\npipelines:\n  - name: " + name + "\n"
             "    source: { plugin: counter, config: { " + source_config + " } }\n" +
             (transforms.empty() ? "" : "    transforms: " + transforms + "\n") +
             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
  return dir / "p.yaml";
}

}  // namespace

TEST(FailureLogging, APipelineFailingInCreateIsLoggedWithItsReason) {
  auto dir = temp_dir("faillog");
  const fs::path yaml =
      counter_pipeline(dir, "t", "count: 10", "[ { plugin: reject-every, config: { every: 0 } } ]");
  auto r = run(exactly_bin() + " run --no-watch " + yaml.string(), dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string line = "ERROR [pipeline:t] failed, not restarted (fix the configuration): ";
  auto at = r.err.find(line);
  ASSERT_NE(at, std::string::npos) << r.err;
  // The log line names where and why, as validate would.
  std::string rest = r.err.substr(at + line.size(), r.err.find('\n', at) - at - line.size());
  EXPECT_NE(rest.find("p.yaml:5:"), std::string::npos) << rest;
  EXPECT_NE(rest.find("key 'every'"), std::string::npos) << rest;
  EXPECT_NE(rest.find("must be positive"), std::string::npos) << rest;
}

// errors.policy: stop on a record: the data's problem, said as such (it was logged as
// "failed, not restarted (fix the configuration)", sending the operator to the YAML).
TEST(FailureLogging, ARecordStoppedByThePolicyIsNotCalledAConfigurationProblem) {
  auto dir = temp_dir("faillog");
  const fs::path yaml =
      counter_pipeline(dir, "t", "count: 100", "[ { plugin: reject-every, config: { every: 70 } } ]");
  auto r = run(exactly_bin() + " run --no-watch " + yaml.string(), dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("ERROR [pipeline:t] stopped, not restarted: record at counter-0@70 rejected by "
                       "transforms[0]/reject-every: value 70 is a multiple of 70 (errors.policy: stop)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("fix the configuration"), std::string::npos) << r.err;
}

// A config error that a plugin finds only in process() names the key's place in the file,
// as one from create() does (it said only "transforms[0]/say: ...").
TEST(FailureLogging, AConfigErrorFromProcessNamesTheKeysFileLine) {
  auto dir = temp_dir("faillog");
  const fs::path yaml = counter_pipeline(dir, "t", "count: 10",
                                         "[ { plugin: say, config: { message: hi, fail.in.process: true } } ]");
  auto r = run(exactly_bin() + " run --no-watch " + yaml.string(), dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("p.yaml:5:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: transforms[0] (say) process: key 'message': refused once records arrived"),
            std::string::npos)
      << r.err;
}

// A config error found only at the commit (a stage's prepare_commit naming a key) names
// the key's file:line:col, as one from process() does.
TEST(FailureLogging, AConfigErrorFromPrepareCommitNamesTheKeysFileLine) {
  auto dir = temp_dir("faillog");
  const fs::path yaml = counter_pipeline(dir, "t", "count: 10",
                                         "[ { plugin: checked, config: { level: 3, refuse.prepare: true } } ]");
  auto r = run(exactly_bin() + " run --no-watch " + yaml.string(), dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("p.yaml:5:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: transforms[0] (checked) prepare_commit: key 'level': refused at prepare_commit"),
            std::string::npos) << r.err;
}

// A plugin that crashes the process: one line on stderr names the pipeline, the stage,
// the plugin and its library before the host dies of the signal (issue "hardening").
void expect_crash_report(bool own_thread) {
  auto dir = temp_dir("crash");
  const std::string plugins = test_plugins();
  const fs::path yaml = counter_pipeline(dir, "crashy", "count: 1000, batch.size: 10",
                                         "[ { plugin: crash-at, config: { at: 500, own.thread: " +
                                             std::string(own_thread ? "true" : "false") + " } } ]");
  auto r = run(exactly_bin() + " run --no-watch " + yaml.string(), dir);
  // Dead of the signal itself (the shell running it reports 128 + signal).
  EXPECT_TRUE(r.signal == SIGSEGV || r.exit_code == 128 + SIGSEGV)
      << "exit " << r.exit_code << ", signal " << r.signal << "\n" << r.err;
  auto at = r.err.find("exactly: fatal SIGSEGV");
  ASSERT_NE(at, std::string::npos) << r.err;
  std::string line = r.err.substr(at, r.err.find('\n', at) - at);
  std::printf("%s\n", line.c_str());
  // The library of the faulting code, on any thread.
  EXPECT_NE(line.find("faulting code in " + plugins + "/"), std::string::npos) << line;
  if (own_thread) {
    EXPECT_NE(line.find("outside any plugin call on this thread"), std::string::npos) << line;
  } else {
    EXPECT_NE(line.find("in pipeline 'crashy', stage 'transforms[0]/crash-at' (" + plugins + "/"),
              std::string::npos) << line;
    EXPECT_NE(line.find("during process"), std::string::npos) << line;
    // The records it was given: the batch that holds the poison record (QA).
    EXPECT_NE(line.find("during process (working on counter-0@500 and 9 more)"), std::string::npos) << line;
  }
}

TEST(FailureLogging, ACrashInAPluginCallNamesPipelineStageAndLibrary) { expect_crash_report(false); }

TEST(FailureLogging, ACrashOnAPluginThreadNamesTheLibrary) { expect_crash_report(true); }

// A plugin that calls exit() (0 included) no longer ends the host silently with its
// status: one line names the pipeline, stage and library, and the exit code is 4.
void expect_exit_report(bool own_thread) {
  auto dir = temp_dir("exit");
  const std::string plugins = test_plugins();
  const fs::path yaml = counter_pipeline(dir, "quitter", "count: 1000, batch.size: 10",
                                         "[ { plugin: exit-at, config: { at: 500, status: 0, own.thread: " +
                                             std::string(own_thread ? "true" : "false") + " } } ]");
  auto r = run(exactly_bin() + " run --no-watch " + yaml.string(), dir);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  auto at = r.err.find("exactly: exit(0) called");
  ASSERT_NE(at, std::string::npos) << r.err;
  std::string line = r.err.substr(at, r.err.find('\n', at) - at);
  std::printf("%s\n", line.c_str());
  EXPECT_NE(line.find("called from " + plugins + "/exactly_testkit.so"), std::string::npos) << line;
  EXPECT_NE(line.find("its running rounds are not committed (the next start replays them); exit code 4"),
            std::string::npos) << line;
  if (own_thread) {
    EXPECT_NE(line.find("outside any plugin call on this thread"), std::string::npos) << line;
  } else {
    EXPECT_NE(line.find("in pipeline 'quitter', stage 'transforms[0]/exit-at' (" + plugins + "/"),
              std::string::npos) << line;
    EXPECT_NE(line.find("during process()"), std::string::npos) << line;
  }
}

TEST(FailureLogging, AnExitInAPluginCallIsReportedWithCode4) { expect_exit_report(false); }

TEST(FailureLogging, AnExitOnAPluginThreadNamesTheLibrary) { expect_exit_report(true); }

// A record's position is its offset + 1, so a source that hands out the largest int64 as
// an offset fails the round with a message that names it (instead of a position that
// wrapped to the smallest one being committed), and the record is never written.
namespace {
// Runs the counter source with `source` until the log says `want` (or 30 s), stops the
// host, and returns the log; `never` is a value that must not have been written.
std::string run_until_said(const std::string& tag, const std::string& source, const std::string& want,
                           const std::string& never) {
  auto dir = temp_dir(tag);
  const fs::path yaml = counter_pipeline(dir, "edge", source, "");
  const fs::path log = dir / "run.log";
  Child host({exactly_bin(), "run", "--no-watch", yaml.string()}, log);
  bool seen = false;
  for (int i = 0; i < 300 && !seen; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    seen = read_file(log).find(want) != std::string::npos;
  }
  host.kill(SIGTERM);
  host.wait();
  const std::string out = read_file(log);
  EXPECT_TRUE(seen) << "no '" << want << "' in\n" << out;
  for (const auto& line : lines_of(fs::exists(dir / "out.txt") ? read_file(dir / "out.txt") : ""))
    EXPECT_NE(line, never) << "the record of value " << never << " was written";
  return out;
}
}  // namespace

TEST(FailureLogging, ASourceOffsetWithNoNextPositionFailsTheRoundByName) {
  // Values 0-3 may have been committed; the record at the bad offset ("4") never is.
  const std::string out = run_until_said("offsetmax", "count: 5, batch.size: 1, last.offset: 9223372036854775807",
                                         "has offset 9223372036854775807, which has no next position", "4");
  EXPECT_NE(out.find("(partition 0)"), std::string::npos) << out;
  // Named by its stage, as every other stage's error is (it said only "source:", QA).
  EXPECT_NE(out.find("source/counter: record 0 of a batch of 1 (partition 0)"), std::string::npos) << out;
  EXPECT_NE(out.find("restarting in"), std::string::npos) << out;
}

// A dead-letter sink's failure names that stage by its plugin, as its crash report does
// (it said "dead-letter sink: error ...", whichever plugin it was, QA).
TEST(FailureLogging, ADeadLetterSinksFailureNamesItsStage) {
  auto dir = temp_dir("faillog-dlq");
  write_file(dir / "p.yaml",
             "plugin.path: [" + test_plugins() + "]\npipelines:\n  - name: dl\n"
             "    source: { plugin: counter, config: { count: 100, batch.size: 10 } }\n"
             "    transforms: [ { plugin: reject-every, config: { every: 10 } } ]\n"
             "    errors:\n      policy: dead-letter\n"
             "      dead-letter: { plugin: faulty, config: { path: " + (dir / "dlq.txt").string() +
             ", fatal.probability: 1 } }\n"
             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
  const fs::path log = dir / "run.log";
  Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, log);
  const std::string want = "errors.dead-letter/faulty commit: ";
  for (int i = 0; i < 300 && read_file(log).find(want) == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  host.kill(SIGTERM);
  host.wait();
  const std::string out = read_file(log);
  EXPECT_NE(out.find(want), std::string::npos) << out;
  EXPECT_EQ(out.find("dead-letter sink: "), std::string::npos) << out;
  // Nothing of a round whose dead letters were not kept is committed.
  EXPECT_FALSE(fs::exists(dir / "out.txt") && read_file(dir / "out.txt").find("#pos") != std::string::npos)
      << read_file(dir / "out.txt");
}

// A plugin that refuses its config only when it opens (here: a file source whose path is
// a directory, and a dead-letter file sink on a path that cannot be created) is named by
// the file, line and column of the key it refused, like a create() error, and the
// dead-letter sink's refusal is not reported as the main sink's.
TEST(FailureLogging, AnOpenErrorOnAConfigKeyNamesItsFileLineAndColumn) {
  auto dir = temp_dir("faillog-open");
  fs::create_directories(dir / "in.d");
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: t\n"
             "    source:\n"
             "      plugin: file\n"
             "      config: { path: " + (dir / "in.d").string() + " }\n"
             "    sink: { plugin: file, config: { path: " + (dir / "out.jsonl").string() + " } }\n");
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find((dir / "p.yaml").string() + ":5:23: error: source (file) open: key 'path': " +
                       (dir / "in.d").string() + " is a directory"),
            std::string::npos)
      << r.err;

  // A pipeline whose dead-letter sink writes to `dlq`, in file `name`.
  auto with_dead_letter_file = [&](const std::string& name, const fs::path& dlq, const std::string& out) {
    write_file(dir / name,
               "pipelines:\n"
               "  - name: t\n"
               "    source: { plugin: generator, config: { count: 10 } }\n"
               "    errors:\n"
               "      policy: dead-letter\n"
               "      dead-letter:\n"
               "        plugin: file\n"
               "        config:\n"
               "          path: " + dlq.string() + "\n"
               "    sink: { plugin: file, config: { path: " + (dir / out).string() + " } }\n");
  };
  with_dead_letter_file("q.yaml", dir / "no" / "such" / "dir" / "dlq.jsonl", "out2.jsonl");
  // Refused before anything starts (exit 2, as `exactly validate` refuses it): the file
  // sink's validate looks for the directory; it was an open error at the first start (QA).
  r = run(exactly_bin() + " run --no-watch " + (dir / "q.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((dir / "q.yaml").string() + ":9:17: error: pipeline 't' errors.dead-letter (file): key "
                                                   "'path': cannot use the directory " +
                       (dir / "no" / "such" / "dir").string() + ": No such file or directory"),
            std::string::npos)
      << r.err;
  // An open error still names its place: a path that is a directory passes validate (its
  // directory exists) and is refused at open.
  fs::create_directories(dir / "dlq.d");
  with_dead_letter_file("r.yaml", dir / "dlq.d", "out3.jsonl");
  r = run(exactly_bin() + " run --no-watch " + (dir / "r.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find((dir / "r.yaml").string() + ":9:17: error: errors.dead-letter (file) open: key 'path': "),
            std::string::npos)
      << r.err;
}

// A source that returns records of a partition it never reported with assigned() is
// named as the culprit (a stateful stage used to refuse the records and take the blame).
TEST(FailureLogging, ARecordOfAPartitionTheSourceNeverAssignedIsTheSourcesError) {
  auto dir = temp_dir("faillog-unassigned");
  const fs::path yaml = counter_pipeline(dir, "t", "count: 1000000, announce: false", "");
  Child c({exactly_bin(), "run", "--no-watch", yaml.string()}, dir / "log.txt");
  const std::string want =
      "source/counter: returned a record of partition id 0 (offset 0) that it has not reported with "
      "assigned() (or has revoked)";
  for (int i = 0; i < 200 && read_file(dir / "log.txt").find(want) == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  c.kill(SIGTERM);
  c.wait();
  EXPECT_NE(read_file(dir / "log.txt").find(want), std::string::npos) << read_file(dir / "log.txt");
  EXPECT_EQ(read_file(dir / "out.txt").find("#pos"), std::string::npos) << "a round was committed";
}

// Records dead-lettered into a sink that keeps only values (the file sink) kept no
// reason anywhere: the log says it, for the first 10 and every 1000th.
TEST(FailureLogging, ADeadLetteredRecordsReasonIsLogged) {
  auto dir = temp_dir("faillog-dlq-reason");
  write_file(dir / "in.jsonl", "{\"t\":1}\nnot json\n{\"t\":2}\n");
  write_file(dir / "p.yaml",
             "pipelines:\n  - name: t\n"
             "    source: { plugin: file, config: { path: " + (dir / "in.jsonl").string() + " } }\n"
             "    transforms: [ { plugin: filter, config: { field: /t, op: exists } } ]\n"
             "    errors: { policy: dead-letter, dead-letter: { plugin: file, config: { path: " +
                 (dir / "dlq.jsonl").string() + " } } }\n"
             "    sink: { plugin: file, config: { path: " + (dir / "out.jsonl").string() + " } }\n");
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(dir / "dlq.jsonl"), "not json\n");
  EXPECT_NE(r.err.find("record at file:in.jsonl@16 rejected by transforms[0]/filter: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; to the dead-letter sink (1 so far)"), std::string::npos) << r.err;
}

// Offsets rise within a partition: a source that hands a record at an offset not above the
// one before it (here the value 5 at offset 4, after the value 4 at offset 4) fails the
// round naming both offsets. Unchecked, a record handed twice at its own offset passed a
// dedupe stage twice, as a replay of its own claim (QA), and positions could go back.
TEST(FailureLogging, ASourceOffsetThatDoesNotRiseFailsTheRoundByName) {
  const std::string out =
      run_until_said("offsetrepeat", "count: 10, batch.size: 1, repeat.offset.at: 5",
                     "from partition counter-0 at offset 4 after offset 4: a source's offsets must rise", "5");
  EXPECT_NE(out.find("restarting in"), std::string::npos) << out;
}

// An instance torn down because another stage failed: its plugins are told by stopping()
// (ABI 1.5), so a thread of their own that loses the host's state under it (the dedupe
// stage's background restore) stops quietly instead of logging the teardown as its own
// failure (QA: "restoring ... failed: no sink to keep state" at every restart).
TEST(FailureLogging, AStageTornDownAfterAnotherStagesFailureIsToldTheInstanceStops) {
  auto dir = temp_dir("faillog-probe");
  const fs::path yaml = counter_pipeline(
      dir, "probe", "count: 100, batch.size: 10",
      "[ { plugin: close-probe, config: { path: " + (dir / "probe.txt").string() +
          " } }, { plugin: fail-at, config: { at: 50 } } ]");
  Child host({exactly_bin(), "run", "--no-watch", yaml.string()}, dir / "run.log");
  for (int i = 0; i < 300 && !fs::exists(dir / "probe.txt"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  host.kill(SIGTERM);
  host.wait();
  const std::string log = read_file(dir / "run.log");
  ASSERT_TRUE(fs::exists(dir / "probe.txt")) << log;
  const auto lines = lines_of(read_file(dir / "probe.txt"));
  ASSERT_FALSE(lines.empty()) << log;
  // The first teardown is the failure's, before any signal.
  EXPECT_EQ(lines[0], "stopping=1") << log;
  // An error of the whole call names the batch it had (it named no record, QA).
  EXPECT_NE(log.find("transforms[1]/fail-at: fail-at reached 50 (in process(), working on counter-0@50 and 9 more)"),
            std::string::npos) << log;
}
