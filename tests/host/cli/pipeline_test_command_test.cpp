// `exactly test` through the real binary and the real filter and dedupe plugins: cases
// that pass exit 0, a mismatch exits 1 and shows the record, a wrong file exits 2 with
// its file:line, and the pipeline's own state directory is never touched.
#include <gtest/gtest.h>

#include "test_util.hpp"

#include <sys/stat.h>

using namespace exactly::test;

namespace {

std::string pipeline(const fs::path& state) {
  return "pipelines:\n"
         "  - name: orders\n"
         "    delivery: exactly_once\n"
         "    source: { plugin: kafka, config: { bootstrap.servers: \"127.0.0.1:1\", group.id: g, topics: [orders] } }\n"
         "    transforms:\n"
         "      - plugin: filter\n"
         "        config: { field: /type, value: order }\n"
         "      - plugin: dedupe\n"
         "        config: { id: { json: /id }, state.dir: " + state.string() + " }\n"
         "    sink: { plugin: kafka, config: { bootstrap.servers: \"127.0.0.1:1\", topic: out } }\n";
}

const char* kPassing =
    "tests:\n"
    "  - name: a repeated order leaves once\n"
    "    input:\n"
    "      - { value: '{\"id\":\"a\",\"type\":\"order\",\"n\":1}' }\n"
    "      - { value: '{\"id\":\"b\",\"type\":\"ping\"}' }\n"
    "      - { value: '{\"id\":\"a\",\"type\":\"order\",\"n\":1}' }\n"
    "      - { value: '{\"id\":\"c\",\"type\":\"order\"}', partition: 1, key: k }\n"
    "    expect:\n"
    "      - { value: { id: a, type: order, n: 1 } }\n"
    "      - { value: '{\"id\":\"c\",\"type\":\"order\"}', key: k, partition: 1 }\n"
    "  - name: records from a file, one batch each\n"
    "    input: in.jsonl\n"
    "    batch: 1\n"
    "    expect: out.jsonl\n"
    "    rejected: 1\n";

}  // namespace

TEST(PipelineTest, PassingCasesExitZeroAndTheStateDirIsLeftAlone) {
  auto dir = temp_dir("ptest");
  write_file(dir / "orders.yaml", pipeline(dir / "state"));
  write_file(dir / "orders.test.yaml", kPassing);
  write_file(dir / "in.jsonl",
             "{\"value\": \"{\\\"id\\\":\\\"x\\\",\\\"type\\\":\\\"order\\\"}\"}\n"
             "{\"value\": \"not json\"}\n"
             "{\"value\": \"{\\\"id\\\":\\\"x\\\",\\\"type\\\":\\\"order\\\"}\"}\n");
  write_file(dir / "out.jsonl", "{\"value\": {\"id\": \"x\", \"type\": \"order\"}}\n");
  auto r = run(exactly_bin() + " test " + (dir / "orders.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("ok    orders: a repeated order leaves once (4 in, 2 out, 0 rejected)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok    orders: records from a file, one batch each (3 in, 1 out, 1 rejected)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("2 passed, 0 failed"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "state")) << "the test wrote into the pipeline's state.dir";
}

TEST(PipelineTest, AMismatchExitsOneAndShowsTheRecordAndAnUnexpectedReject) {
  auto dir = temp_dir("ptest");
  write_file(dir / "orders.yaml", pipeline(dir / "state"));
  write_file(dir / "orders.test.yaml",
             "tests:\n"
             "  - name: wrong id\n"
             "    input: [ { value: '{\"id\":\"x\",\"type\":\"order\"}' } ]\n"
             "    expect:\n"
             "      - { value: { id: y, type: order } }\n"
             "  - name: a reject nobody expected\n"
             "    input: [ { value: 'not json' } ]\n"
             "    expect: []\n");
  auto r = run(exactly_bin() + " test " + (dir / "orders.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL  orders: wrong id (" + (dir / "orders.test.yaml").string() + ":2)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("record 1 (" + (dir / "orders.test.yaml").string() + ":5): value"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expected: {\"id\":\"y\",\"type\":\"order\"}"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("actual:   {\"id\":\"x\",\"type\":\"order\"}"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expected 0 rejected record(s), got 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rejected: transforms[0] (filter)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 passed, 2 failed"), std::string::npos) << r.out;
}

TEST(PipelineTest, WrongFilesExitTwoWithFileLineAndKey) {
  auto dir = temp_dir("ptest");
  write_file(dir / "orders.yaml", pipeline(dir / "state"));
  // No test file.
  auto r = run(exactly_bin() + " test " + (dir / "orders.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no test file: write " + (dir / "orders.test.yaml").string()), std::string::npos) << r.err;
  // An unknown key in a case.
  write_file(dir / "orders.test.yaml", "tests:\n  - name: x\n    inputs: []\n    expect: []\n");
  r = run(exactly_bin() + " test " + (dir / "orders.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("orders.test.yaml:3:5: unknown key 'inputs'"), std::string::npos) << r.err;
  // A JSON-lines file with a bad line.
  write_file(dir / "orders.test.yaml", "tests:\n  - name: x\n    input: in.jsonl\n    expect: []\n");
  write_file(dir / "in.jsonl", "{\"value\": \"ok\"}\n{\"valu\": 1}\n");
  r = run(exactly_bin() + " test " + (dir / "orders.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("in.jsonl:2:2: unknown record key 'valu'"), std::string::npos) << r.err;
  // A count that is not one: the key and its column are named.
  write_file(dir / "orders.test.yaml", "tests:\n  - name: x\n    input: []\n    expect: []\n    batch: -3\n");
  r = run(exactly_bin() + " test " + (dir / "orders.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("orders.test.yaml:5:12: key 'batch': expected a count (0 or more), got '-3'"),
            std::string::npos)
      << r.err;
  // Headers that are not a map, in a flow record: key and column.
  write_file(dir / "orders.test.yaml",
             "tests:\n  - name: x\n    input: [ { value: a, headers: [x] } ]\n    expect: []\n");
  r = run(exactly_bin() + " test " + (dir / "orders.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("orders.test.yaml:3:35: key 'headers': expected a map of name: value"),
            std::string::npos)
      << r.err;
  // The pipeline file itself wrong: the same file:line:col message as validate.
  write_file(dir / "orders.yaml", pipeline(dir / "state") + "    bogus: 1\n");
  r = run(exactly_bin() + " test " + (dir / "orders.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("orders.yaml:11:"), std::string::npos) << r.err;
  // A transform config the plugin refuses (ABI 1.3 validate, before any case runs): its
  // place and key are named, like a schema error.
  write_file(dir / "orders.yaml", "pipelines:\n  - name: orders\n"
             "    source: { plugin: kafka, config: { bootstrap.servers: \"127.0.0.1:1\", group.id: g, topics: [orders] } }\n"
             "    transforms: [ { plugin: filter, config: { field: /type, op: regex, value: \"(\" } } ]\n"
             "    sink: { plugin: kafka, config: { bootstrap.servers: \"127.0.0.1:1\", topic: out } }\n");
  write_file(dir / "orders.test.yaml", "tests:\n  - name: x\n    input: [ { value: '{}' } ]\n    expect: []\n");
  r = run(exactly_bin() + " test " + (dir / "orders.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("orders.yaml:4:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("transforms[0] (filter): key 'value': is not a valid regular expression"),
            std::string::npos) << r.err;
}

TEST(PipelineTest, ADirectoryOfPipelinesIgnoresItsTestFiles) {
  auto dir = temp_dir("ptest");
  write_file(dir / "orders.yaml", pipeline(dir / "state"));
  write_file(dir / "orders.test.yaml", kPassing);
  auto r = run(exactly_bin() + " validate " + dir.string(), dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("1 pipeline(s) in 1 file(s) are valid"), std::string::npos) << r.out;
}

// An expected record compares only the topic and partition it gives: one that gives only
// a partition matched a record of another topic against the default topic "test".
TEST(PipelineTest, AnExpectedRecordComparesOnlyThePlacementItGives) {
  auto dir = temp_dir("ptest");
  write_file(dir / "orders.yaml", pipeline(dir / "state"));
  auto test_with = [&](const std::string& expect) {
    write_file(dir / "orders.test.yaml",
               "tests:\n  - name: x\n    input:\n"
               "      - { value: '{\"id\":\"a\",\"type\":\"order\"}', topic: orders, partition: 3 }\n"
               "    expect:\n" + expect);
    return run(exactly_bin() + " test " + (dir / "orders.yaml").string(), dir);
  };
  auto r = test_with("      - { value: { id: a, type: order }, partition: 3 }\n");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = test_with("      - { value: { id: a, type: order }, topic: orders }\n");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = test_with("      - { value: { id: a, type: order }, partition: 2 }\n");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("partition: expected (any topic)-2, actual orders-3"), std::string::npos) << r.out;
  r = test_with("      - { value: { id: a, type: order }, topic: other, partition: 3 }\n");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("partition: expected other-3, actual orders-3"), std::string::npos) << r.out;
}

TEST(PipelineTest, TheQuickstartsCasesPass) {
  auto r = run(exactly_bin() + " test " + std::string(EXACTLY_SOURCE_DIR) + "/configs/quickstart.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 passed, 0 failed"), std::string::npos) << r.out;
}

// A record's position is its offset + 1, and a record without an offset takes the one
// after its predecessor's: offsets at the ends of int64 are refused by name and line
// instead of overflowing.
TEST(PipelineTest, OffsetsOutOfRangeAreRefusedWithTheirLine) {
  auto dir = temp_dir("ptest");
  write_file(dir / "orders.yaml", pipeline(dir / "state"));
  // One case whose input lines start on line 4 of the test file.
  auto test_with = [&](const std::string& input) {
    write_file(dir / "orders.test.yaml", "tests:\n  - name: x\n    input:\n" + input + "    expect: []\n");
    return run(exactly_bin() + " test " + (dir / "orders.yaml").string(), dir);
  };
  auto r = test_with("      - { value: '{\"id\":\"a\",\"type\":\"order\"}', offset: 9223372036854775807 }\n");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("orders.test.yaml:4:55: key 'offset': expected an integer from 0 to "
                       "9223372036854775806, got '9223372036854775807'"),
            std::string::npos) << r.err;
  r = test_with("      - { value: '{\"id\":\"a\",\"type\":\"order\"}', offset: -3 }\n");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("orders.test.yaml:4:55: key 'offset': expected an integer from 0"), std::string::npos) << r.err;
  // Past int64 is a file error too, not a failed case (it was: exit 1).
  r = test_with("      - { value: '{\"id\":\"a\",\"type\":\"order\"}', offset: 99999999999999999999 }\n");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("key 'offset': expected an integer from 0"), std::string::npos) << r.err;
  // Partitions are 0..2^31-1: -1 was taken, a number past int32 was "not an integer".
  for (const std::string bad : {"-1", "99999999999"}) {
    r = test_with("      - { value: '{\"id\":\"a\",\"type\":\"order\"}', partition: " + bad + " }\n");
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("orders.test.yaml:4:58: key 'partition': expected an integer from 0 to 2147483647, got '" +
                         bad + "'"),
              std::string::npos) << r.err;
  }
  // The largest offset, then one left to take the next: the case fails naming that record.
  r = test_with("      - { value: '{\"id\":\"a\",\"type\":\"order\"}', offset: 9223372036854775806 }\n"
                "      - { value: '{\"id\":\"b\",\"type\":\"order\"}' }\n");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("orders.test.yaml:5: no offset is left after 9223372036854775806"),
            std::string::npos) << r.out;
}

// A FIFO as the test file or as a case's input file: refused at once, as config files
// are, instead of `exactly test` waiting for a writer.
TEST(PipelineTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  auto dir = temp_dir("ptest-fifo");
  write_file(dir / "orders.yaml", pipeline(dir / "state"));
  ASSERT_EQ(::mkfifo((dir / "in.jsonl").c_str(), 0600), 0);
  write_file(dir / "orders.test.yaml", "tests:\n  - name: x\n    input: in.jsonl\n    expect: []\n");
  auto r = run("timeout 20 " + exactly_bin() + " test " + (dir / "orders.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << "124 = hung\n" << r.out << r.err;
  EXPECT_NE(r.err.find("in.jsonl: is a FIFO (named pipe), not a regular file"), std::string::npos) << r.err;
  fs::remove(dir / "orders.test.yaml");
  ASSERT_EQ(::mkfifo((dir / "orders.test.yaml").c_str(), 0600), 0);
  r = run("timeout 20 " + exactly_bin() + " test " + (dir / "orders.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << "124 = hung\n" << r.out << r.err;
  EXPECT_NE(r.err.find("cannot read the test file: is a FIFO (named pipe), not a regular file"),
            std::string::npos)
      << r.err;
}

// A transform that keeps or rejects a record past its batch (a plugin bug): `exactly test`
// fails the case with the host's words, as `exactly run` fails the round. It crashed
// (keep: an index read past the input) or counted the reject as a normal one.
TEST(PipelineTest, AKeepOrRejectPastTheBatchFailsTheCaseAsTheHostWould) {
  for (const std::string call : {"keep", "reject"}) {
    auto dir = temp_dir("ptest-bad-index");
    write_file(dir / "p.yaml",
               "plugin.path: [" + std::string(EXACTLY_BUILD_DIR) + "/test-plugins]\n"
               "pipelines:\n  - name: p\n"
               "    source: { plugin: counter, config: { count: 3 } }\n"
               "    transforms: [ { plugin: bad-index, config: { at: 2, call: " + call + " } } ]\n"
               "    sink: { plugin: discard, config: {} }\n");
    write_file(dir / "p.test.yaml",
               "tests:\n  - name: x\n    input: [ { value: '1' }, { value: '2' }, { value: '3' } ]\n"
               "    expect: [ { value: '1' }, { value: '2' }, { value: '3' } ]\n");
    auto r = run(exactly_bin() + " test " + (dir / "p.yaml").string(), dir);
    EXPECT_EQ(r.exit_code, 1) << call << "\n" << r.out << r.err;
    EXPECT_NE((r.out + r.err).find("process failed: a record index out of the batch (" + call +
                                   "(1003) on a batch of 3 record(s))"),
              std::string::npos)
        << call << "\n" << r.out << r.err;
  }
}

namespace {
// A pipeline of one testkit transform, and a case its output must fail (expects 999).
fs::path testkit_case(const std::string& transform, const std::string& host_settings = "") {
  auto dir = temp_dir("ptest-plugin-ends");
  write_file(dir / "p.yaml",
             host_settings + "plugin.path: [" + std::string(EXACTLY_BUILD_DIR) + "/test-plugins]\n"
             "pipelines:\n  - name: p\n"
             "    source: { plugin: counter, config: { count: 3 } }\n"
             "    transforms: [ { plugin: " + transform + " } ]\n"
             "    sink: { plugin: discard, config: {} }\n");
  write_file(dir / "p.test.yaml",
             "tests:\n  - name: must fail\n    input: [ { value: '1' }, { value: '2' } ]\n"
             "    expect: [ { value: '999' } ]\n");
  return dir;
}
}  // namespace

// A transform's exit() ended `exactly test` with the plugin's status: 0, so a case that
// had to fail passed in CI, without a word.
TEST(PipelineTest, APluginsExitEndsItWithCodeFourNamingThePlugin) {
  auto dir = testkit_case("exit-at, config: { at: 2 }");
  auto r = run("timeout -s KILL 60 " + exactly_bin() + " test " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("exit(0) called"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exactly_testkit.so"), std::string::npos) << r.err;
  // Named by its stage and call, as under `run` (it said "outside any plugin call").
  EXPECT_NE(r.err.find("in pipeline 'p', stage 'transforms[0]/exit-at'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("during process()"), std::string::npos) << r.err;
  // What it cut short is the test, not a run's rounds (it spoke of a replay, QA).
  EXPECT_NE(r.err.find("the test did not finish; exit code 4"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("replays"), std::string::npos) << r.err;
}

TEST(PipelineTest, APluginsCrashIsReportedInOneLine) {
  auto dir = testkit_case("crash-at, config: { at: 2 }");
  auto r = run("timeout -s KILL 60 " + exactly_bin() + " test " + (dir / "p.yaml").string(), dir);
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("exactly: fatal SIGSEGV"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exactly_testkit.so"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("outside any plugin call"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stage 'transforms[0]/crash-at'"), std::string::npos) << r.err;
}

// A transform that never returns: the case is named and the command ends (code 3) after
// stage.timeout, instead of hanging a CI job.
TEST(PipelineTest, ACaseStuckPastStageTimeoutEndsItWithCodeThree) {
  auto dir = testkit_case("sleep-at, config: { at: 2, ms: 600000 }", "stage.timeout: 1s\n");
  auto r = run("timeout -s KILL 60 " + exactly_bin() + " test " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("TIMEOUT p: must fail (" + (dir / "p.test.yaml").string() + ":2)"), std::string::npos) << r.out;
}

// The actual value was read as YAML: the number 1 matched the string "1", and a value
// that is not JSON at all matched a map. Headers are a map: any order.
TEST(PipelineTest, ValuesCompareAsJsonWithTheirTypesAndHeadersInAnyOrder) {
  auto dir = temp_dir("ptest-types");
  write_file(dir / "p.yaml",
             "pipelines:\n  - name: p\n"
             "    source: { plugin: generator, config: { count: 5 } }\n"
             "    transforms: [ { plugin: filter, config: { field: /t, op: exists, on.invalid: keep } } ]\n"
             "    sink: { plugin: file, config: { path: o.jsonl } }\n");
  write_file(dir / "p.test.yaml",
             "tests:\n"
             "  - name: a string is not a number\n"
             "    input: [ { value: '{\"t\":\"1\"}' } ]\n"
             "    expect: [ { value: { t: 1 } } ]\n"
             "  - name: YAML is not JSON\n"
             "    input: [ { value: 't: 1' } ]\n"
             "    expect: [ { value: { t: 1 } } ]\n"
             "  - name: numbers by value, quoted strings as strings\n"
             "    input: [ { value: '{\"t\":1.0,\"s\":\"1\",\"n\":null,\"b\":true}' } ]\n"
             "    expect: [ { value: { t: 1, s: '1', n: null, b: true } } ]\n"
             "  - name: headers in another order\n"
             "    input: [ { value: '{\"t\":1}', headers: { a: '1', b: '2' } } ]\n"
             "    expect: [ { value: { t: 1 }, headers: { b: '2', a: '1' } } ]\n"
             "  - name: a header that differs is shown\n"
             "    input: [ { value: '{\"t\":1}', headers: { a: '1' } } ]\n"
             "    expect: [ { value: { t: 1 }, headers: { a: '2' } } ]\n");
  auto r = run(exactly_bin() + " test " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL  p: a string is not a number"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL  p: YAML is not JSON"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok    p: numbers by value, quoted strings as strings"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok    p: headers in another order"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("headers\n      expected: {a: 2}\n      actual:   {a: 1}"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 passed, 3 failed"), std::string::npos) << r.out;
}

TEST(PipelineTest, AKeyOrHeaderThatIsNotAStringIsAnErrorOfTheTestFile) {
  for (const std::string rec : {"{ value: x, key: [1] }", "{ value: x, headers: { h: [1, 2] } }",
                                "{ value: x, headers: { h: ~ } }"}) {
    auto dir = temp_dir("ptest-nonscalar");
    write_file(dir / "p.yaml",
               "pipelines:\n  - name: p\n"
               "    source: { plugin: generator, config: { count: 5 } }\n"
               "    transforms: [ { plugin: filter, config: { field: /t, op: exists, on.invalid: keep } } ]\n"
               "    sink: { plugin: file, config: { path: o.jsonl } }\n");
    write_file(dir / "p.test.yaml", "tests:\n  - name: x\n    input: [ " + rec + " ]\n    expect: []\n");
    auto r = run(exactly_bin() + " test " + (dir / "p.yaml").string(), dir);
    EXPECT_EQ(r.exit_code, 2) << rec << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find((dir / "p.test.yaml").string() + ":3"), std::string::npos) << rec << "\n" << r.err;
    EXPECT_NE(r.err.find("expects a string"), std::string::npos) << rec << "\n" << r.err;
  }
}
