// `exactly validate` through the real binary and the real plugins: a value that only a
// plugin's create() used to refuse is refused by validate (ABI 1.3 `validate`), named by
// file:line:col and key, and the check creates nothing (no state.dir, no files).
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <tuple>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

struct Case {
  const char* name;
  std::string source;      // YAML of the source block
  std::string transforms;  // "" or YAML of the transforms list
  std::string sink;
  int line;                // where the refused value is
  const char* key;
  const char* why;         // part of the plugin's message
};

// ctest shows the case's name, not its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const std::string kGen = "{ plugin: generator, config: { count: 10 } }";
const std::string kFileSink = "{ plugin: file, config: { path: out.jsonl } }";

std::string yaml(const Case& c) {
  std::string y = "pipelines:\n"            // 1
                  "  - name: p\n"           // 2
                  "    source: " + c.source + "\n";  // 3
  if (!c.transforms.empty()) y += "    transforms:\n" + c.transforms;  // 4, 5...
  y += "    sink: " + c.sink + "\n";
  return y;
}

class ValidatePluginChecks : public ::testing::TestWithParam<Case> {};

TEST_P(ValidatePluginChecks, RefusedWithFileLineAndKey) {
  const Case& c = GetParam();
  fs::path dir = temp_dir("validate-plugin");
  write_file(dir / "p.yaml", yaml(c));
  auto r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  std::string where = (dir / "p.yaml").string() + ":" + std::to_string(c.line) + ":";
  EXPECT_NE(r.err.find(where), std::string::npos) << "expected " << where << " in:\n" << r.err;
  EXPECT_NE(r.err.find(std::string("key '") + c.key + "'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(c.why), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing would start"), std::string::npos) << r.err;
  // Side-effect free: nothing but the YAML and the captured output in the directory.
  for (auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    EXPECT_TRUE(n == "p.yaml" || n == "stdout.txt" || n == "stderr.txt") << "validate created " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryBuiltInPlugin, ValidatePluginChecks,
    ::testing::Values(
        Case{"KafkaSourceIsolationLevel",
             "{ plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, group.id: g, topics: [t], "
             "static.membership: true, state.dir: st, rdkafka: { isolation.level: read_uncommitted } } }",
             "", kFileSink, 3, "rdkafka.isolation.level", "read_committed"},
        Case{"KafkaSourceBatchSize",
             "{ plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, group.id: g, topics: [t], batch.size: 0 } }",
             "", kFileSink, 3, "batch.size", "at least 1"},
        Case{"KafkaSourceTopicPatternThatIsNoRegex",
             "{ plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, group.id: g, topics: [\"^(\"] } }",
             "", kFileSink, 3, "topics", "is not a valid one"},
        Case{"KafkaSourceUnknownRdkafkaProperty",
             "{ plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, group.id: g, topics: [t], "
             "rdkafka: { no.such.property: 1 } } }",
             "", kFileSink, 3, "rdkafka.no.such.property", "No such configuration property"},
        // librdkafka checks some settings together only when a client is made: validate
        // passed them and run refused them at once (QA).
        Case{"KafkaSourceSaslMechanism",
             "{ plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, group.id: g, topics: [t], "
             "rdkafka: { security.protocol: SASL_SSL, sasl.mechanism: FOO } } }",
             "", kFileSink, 3, "rdkafka", "Unsupported SASL mechanism: FOO"},
        Case{"KafkaSinkCaMissing", kGen, "",
             "{ plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, topic: t, "
             "rdkafka: { security.protocol: SSL, ssl.ca.location: /nonexistent/ca.pem } } }",
             4, "rdkafka.ssl.ca.location", "/nonexistent/ca.pem: No such file or directory"},
        // A FIFO there blocked the client's creation for ever; a device is refused alike.
        Case{"KafkaSourceCaNotAFile",
             "{ plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, group.id: g, topics: [t], "
             "rdkafka: { security.protocol: SSL, ssl.ca.location: /dev/null } } }",
             "", kFileSink, 3, "rdkafka.ssl.ca.location", "/dev/null: is not a regular file or directory"},
        Case{"KafkaSinkIdempotence", kGen, "",
             "{ plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, topic: t, state.dir: st, "
             "rdkafka: { enable.idempotence: false } } }",
             4, "rdkafka.enable.idempotence", "idempotent"},
        Case{"DedupeFilterBits", kGen,
             "      - plugin: dedupe\n"
             "        config: { id.json: /messageId, state.dir: st, rocksdb.filter.bits.per.key: 99 }\n",
             kFileSink, 6, "rocksdb.filter.bits.per.key", "between 1 and 50"},
        Case{"DedupeRedisShard", kGen,
             "      - plugin: dedupe-redis\n"
             "        config: { id.json: /messageId, shards: [nohost], retention.max.age: 1h }\n",
             kFileSink, 6, "shards", "host:port"},
        Case{"FileSourceBatchSize", "{ plugin: file, config: { path: in.jsonl, batch.size: 0 } }", "",
             kFileSink, 3, "batch.size", "between 1 and"},
        Case{"FileSinkEmptyPath", kGen, "", "{ plugin: file, config: { path: '' } }", 4, "path",
             "must not be empty"},
        Case{"GeneratorBatchSize", "{ plugin: generator, config: { batch.size: 0 } }", "", kFileSink, 3,
             "batch.size", "between 1 and"},
        Case{"FilterRegex", kGen,
             "      - plugin: filter\n"
             "        config: { field: /type, op: regex, value: '(' }\n",
             kFileSink, 6, "value", "not a valid regular expression"},
        Case{"HttpUrlScheme", kGen, "", "{ plugin: http, config: { url: 'ftp://example' } }", 4, "url",
             "http://"},
        // Configured headers went on the wire unchecked: a name with a space as is, and a
        // second Content-Type or Idempotency-Key beside the sink's own.
        Case{"HttpHeaderName", kGen, "",
             "{ plugin: http, config: { url: 'http://127.0.0.1:1/x', headers: { 'Bad Header': v } } }", 4,
             "headers.Bad Header", "not an HTTP header name"},
        Case{"HttpHeaderContentType", kGen, "",
             "{ plugin: http, config: { url: 'http://127.0.0.1:1/x', headers: { Content-Type: text/plain } } }",
             4, "headers.Content-Type", "content.type"},
        Case{"HttpHeaderIdempotencyKey", kGen, "",
             "{ plugin: http, config: { url: 'http://127.0.0.1:1/x', idempotency.key: /messageId, "
             "headers: { idempotency-key: fixed } } }",
             4, "headers.idempotency-key", "from idempotency.key"}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(ValidatePluginChecks, AValidConfigStillPassesAndCreatesNothing) {
  fs::path dir = temp_dir("validate-plugin-ok");
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: p\n"
             "    delivery: exactly_once\n"
             "    source: { plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, group.id: g, "
             "topics: [t], static.membership: true, state.dir: st1, rdkafka: { fetch.min.bytes: 1 } } }\n"
             "    transforms:\n"
             "      - plugin: dedupe\n"
             "        config: { id.json: /messageId, state.dir: st2 }\n"
             "    sink: { plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, topic: t2, state.dir: st3 } }\n");
  auto r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(dir / "st1"));
  EXPECT_FALSE(fs::exists(dir / "st2"));
  EXPECT_FALSE(fs::exists(dir / "st3"));
  EXPECT_FALSE(fs::exists(fs::current_path() / "st1"));
}

// An error about a map as a whole ("rdkafka": librdkafka refusing the settings together)
// is placed at the map's first entry, not at the block's first key (QA: login and CA
// errors pointed at bootstrap.servers).
TEST(ValidatePluginChecks, AnErrorAboutAWholeMapPointsAtItsFirstEntry) {
  fs::path dir = temp_dir("validate-plugin-map");
  write_file(dir / "p.yaml",
             "pipelines:\n"                                 // 1
             "  - name: p\n"                                // 2
             "    source:\n"                                // 3
             "      plugin: kafka\n"                        // 4
             "      config:\n"                              // 5
             "        bootstrap.servers: 127.0.0.1:1\n"     // 6
             "        group.id: g\n"                        // 7
             "        topics: [t]\n"                        // 8
             "        rdkafka:\n"                           // 9
             "          security.protocol: SASL_SSL\n"      // 10
             "          sasl.mechanism: FOO\n"              // 11
             "    sink: " + kFileSink + "\n");
  auto r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find((dir / "p.yaml").string() + ":10:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("key 'rdkafka': Unsupported SASL mechanism: FOO"), std::string::npos) << r.err;
}

// The client made to check the settings is made without bootstrap servers: it connects
// nowhere, and a valid secured config passes.
TEST(ValidatePluginChecks, AValidSecuredConfigPasses) {
  fs::path dir = temp_dir("validate-plugin-sasl");
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: p\n"
             "    delivery: exactly_once\n"
             "    source: { plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, group.id: g, topics: [t], "
             "rdkafka: { security.protocol: SASL_SSL, sasl.mechanism: SCRAM-SHA-512, sasl.username: u, "
             "sasl.password: p, ssl.ca.location: probe } } }\n"
             "    sink: { plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, topic: t2, state.dir: st, "
             "rdkafka: { security.protocol: SASL_SSL, sasl.mechanism: PLAIN, sasl.username: u, "
             "sasl.password: p, ssl.ca.location: " + dir.string() + " } } }\n");
  auto r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(dir / "st"));
}

// The sink is checked with the pipeline's delivery, as create() gets it.
TEST(ValidatePluginChecks, TheSinkSeesThePipelinesDelivery) {
  fs::path dir = temp_dir("validate-plugin-delivery");
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: p\n"
             "    delivery: exactly_once\n"
             "    source: { plugin: generator, config: { count: 10 } }\n"
             "    sink: { plugin: http, config: { url: 'http://127.0.0.1:1/x' } }\n");
  auto r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("key 'delivery'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at_least_once"), std::string::npos) << r.err;
  // At the pipeline's `delivery:` (line 3), where it was written: not the sink's url line.
  EXPECT_EQ(r.err.rfind((dir / "p.yaml").string() + ":3:", 0), 0u) << r.err;
}

// dedupe's changelog: on behind a sink that keeps no changelogs (the file sink) is the
// config's problem: the pipeline fails once, naming the key, instead of restarting into
// "refused the assignment" for ever (a bounded run never ended).
// The http sink settles records after its commit returns (a completion window) and the
// host drives that window only for the main sink: as a dead-letter sink, the offsets
// moved past dead letters it later failed to deliver. Refused where it is written.
TEST(ValidatePluginChecks, ASinkThatFinishesAfterTheCommitIsRefusedAsDeadLetterSink) {
  fs::path dir = temp_dir("validate-dlq-http");
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: p\n"
             "    errors:\n"
             "      policy: dead-letter\n"
             "      dead-letter: { plugin: http, config: { url: \"http://127.0.0.1:9/dlq\" } }\n"
             "    source: " + kGen + "\n"
             "    sink: " + kFileSink + "\n");
  for (const char* cmd : {" validate ", " run --no-watch "}) {
    auto r = run("timeout 60 " + exactly_bin() + cmd + (dir / "p.yaml").string(), dir);
    EXPECT_EQ(r.exit_code, 2) << cmd << r.out << r.err;
    EXPECT_NE(r.err.find((dir / "p.yaml").string() + ":5:20: error: pipeline 'p': errors.dead-letter: "
                         "the http sink finishes its records after the commit"),
              std::string::npos)
        << cmd << r.err;
  }
  EXPECT_FALSE(fs::exists(dir / "out.jsonl"));
}

TEST(ValidatePluginChecks, AChangelogBehindASinkThatKeepsNoneFailsTheRunOnce) {
  fs::path dir = temp_dir("run-changelog-file-sink");
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: p\n"
             "    source: { plugin: generator, config: { count: 10 } }\n"
             "    transforms:\n"
             "      - plugin: dedupe\n"
             "        config: { id.json: /messageId, state.dir: " + (dir / "st").string() + ", changelog: on }\n"
             "    sink: { plugin: file, config: { path: " + (dir / "out.jsonl").string() + " } }\n");
  auto r = run("timeout 60 " + exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.exit_code, 124) << "still restarting after 60 s: " << r.err;
  EXPECT_NE(r.err.find("failed, not restarted (fix the configuration)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("changelog: on, but the pipeline's sink keeps no state changelogs"),
            std::string::npos) << r.err;
  // Named by its file, line and key, as a create() error is (not as the source's error).
  EXPECT_NE(r.err.find((dir / "p.yaml").string() + ":6:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: transforms[0] (dedupe) assign: key 'changelog': "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("source: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("restarting in"), std::string::npos) << r.err;
}

}  // namespace

// Libraries on the plugin path that were not loaded are named by `validate` as `run` names
// them: a library that shadows another's component decides which code a pipeline gets,
// and `validate` said only "ok".
TEST(ValidatePluginChecks, LibrariesSkippedOnThePluginPathAreNamedAsWarnings) {
  fs::path dir = temp_dir("validate-skipped");
  const std::string plugins = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";
  write_file(dir / "p.yaml",
             "plugin.path: [" + plugins + "]\n"
             "pipelines:\n"
             "  - name: p\n"
             "    source: { plugin: counter, config: { count: 1 } }\n"
             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
  auto r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("warning: skipped " + plugins + "/exactly_abi_mismatch.so: built for plugin ABI 2.0"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("1 pipeline(s) in 1 file(s) are valid"), std::string::npos) << r.out;
}

// A plugin's check stops at its first error; validate runs it again without each refused
// key, so one run lists every bad value (QA: eight bad keys took eight runs). An error
// that only leaving a key out can cause (a required key then missing) is not listed: a
// refused required key ends its component's list.
TEST(ValidatePluginChecks, EveryBadValueOfAComponentIsListedInOneRun) {
  fs::path dir = temp_dir("validate-plugin-all");
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: p\n"
             "    source:\n"
             "      plugin: kafka\n"
             "      config:\n"
             "        bootstrap.servers: 127.0.0.1:1\n"
             "        group.id: g\n"
             "        topics: [t]\n"
             "        batch.size: 0\n"                          // 9
             "        rdkafka:\n"
             "          no.such.property: 1\n"                  // 11
             "          isolation.level: read_uncommitted\n"    // 12
             "    transforms:\n"
             "      - plugin: filter\n"
             "        config: { field: /type, op: regex, value: '(' }\n"  // 15
             "    sink: { plugin: http, config: { url: 'ftp://example' } }\n");  // 16
  auto r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  const std::string at = (dir / "p.yaml").string() + ":";
  for (auto [line, key, why] : {std::tuple{9, "batch.size", "at least 1"},
                                std::tuple{11, "rdkafka.no.such.property", "No such configuration property"},
                                std::tuple{12, "rdkafka.isolation.level", "read_committed"},
                                std::tuple{15, "value", "not a valid regular expression"},
                                std::tuple{16, "url", "http://"}}) {
    const size_t p = r.err.find(at + std::to_string(line) + ":");
    ASSERT_NE(p, std::string::npos) << "no error at line " << line << ":\n" << r.err;
    const std::string msg = r.err.substr(p, r.err.find('\n', p) - p);
    EXPECT_NE(msg.find(std::string("key '") + key + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(why), std::string::npos) << msg;
  }
  // Each once; the sink's `url` left out is missing, which is not the file's error.
  EXPECT_EQ(r.err.find("is required"), std::string::npos) << r.err;
  size_t n = 0;
  for (size_t p = 0; (p = r.err.find("key '", p)) != std::string::npos; ++p) ++n;
  EXPECT_EQ(n, 5u) << r.err;
}

// ABI 1.6 EX_CFG_EXCLUSIVE_PATH: two pipelines writing one dead-letter file (named two
// ways) passed validate and failed at start (QA). Refused at load, naming both places;
// the same for two file sources keeping one offsets file. Different files pass.
TEST(ValidatePluginChecks, TwoComponentsNamingOneExclusiveFileAreRefusedNamingBoth) {
  fs::path dir = temp_dir("validate-exclusive");
  auto pipeline = [](const std::string& name, const std::string& dlq, const std::string& offsets) {
    return "  - name: " + name + "\n"                                                  // +0
           "    source: { plugin: file, config: { path: in.jsonl, offsets.path: " + offsets + " } }\n"  // +1
           "    sink: { plugin: file, config: { path: out-" + name + ".jsonl } }\n"   // +2
           "    errors: { policy: dead-letter, dead-letter: { plugin: file, config: { path: " + dlq +
           ", format: json } } }\n";                                                   // +3
  };
  write_file(dir / "a.yaml", "pipelines:\n" + pipeline("a", "dlq.jsonl", "a.offsets"));
  write_file(dir / "b.yaml", "pipelines:\n" + pipeline("b", "./sub/../dlq.jsonl", "a.offsets") +
                                 pipeline("c", "dlq-c.jsonl", "c.offsets"));
  auto r = run(exactly_bin() + " validate " + (dir / "a.yaml").string() + " " + (dir / "b.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  const std::string a = (dir / "a.yaml").string(), b = (dir / "b.yaml").string();
  // The second of each pair is the error, and names the first with its place.
  EXPECT_NE(r.err.find(b + ":5:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pipeline 'b' errors.dead-letter (file): key 'path': ./sub/../dlq.jsonl is already used "
                       "by pipeline 'a' errors.dead-letter (file) (" + a + ":5:"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(b + ":3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pipeline 'b' source (file): key 'offsets.path': a.offsets is already used by "
                       "pipeline 'a' source (file) (" + a + ":3:"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("pipeline 'c'"), std::string::npos) << r.err;
  EXPECT_EQ(count_of(r.err, "is already used by"), 2) << r.err;
}
