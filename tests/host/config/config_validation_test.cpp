// Every bad-input class through the real binary: `exactly validate` must exit 2 and
// name file:line:col and the key. Uses the testkit plugin (real .so loading).
#include <gtest/gtest.h>

#include "test_util.hpp"

#include <sys/stat.h>

using namespace exactly::test;

namespace {

const std::string kPluginPath = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

class ValidateTest : public ::testing::Test {
 protected:
  fs::path dir = temp_dir("validate");
  // Writes the YAML and runs validate on it.
  RunResult validate(const std::string& yaml, const std::string& name = "p.yaml") {
    write_file(dir / name, "plugin.path: [" + kPluginPath + "]\n" + yaml);
    return run(exactly_bin() + " validate " + (dir / name).string(), dir);
  }
  std::string file(const std::string& name = "p.yaml") { return (dir / name).string(); }
};

const char* kGood = R"(pipelines:
  - name: good
    source: { plugin: counter, config: { count: 10 } }
    transforms:
      - plugin: reject-every
        config: { every: 3 }
    sink:
      plugin: faulty
      config:
        path: /tmp/x
)";

TEST_F(ValidateTest, ValidFilePasses) {
  auto r = validate(kGood);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ok  good"), std::string::npos) << r.out;
}

TEST_F(ValidateTest, MalformedYamlNamesLineAndColumn) {
  auto r = validate("pipelines:\n  - name: x\n    source: { plugin: counter\n    sink: [\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(file() + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("malformed YAML"), std::string::npos) << r.err;
}

TEST_F(ValidateTest, UnknownPluginIsNamedWithKnownOnes) {
  auto r = validate(R"(pipelines:
  - name: x
    source: { plugin: countr }
    sink: { plugin: faulty, config: { path: /tmp/x } }
)");
  EXPECT_EQ(r.exit_code, 2);
  // plugin.path is line 1, so the source map is on line 4, column 13.
  EXPECT_NE(r.err.find(file() + ":4:13: error: pipeline 'x' source: unknown source plugin 'countr'"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("counter"), std::string::npos) << r.err;
}

// A name with control characters (a terminal escape) is shown escaped, not sent raw.
TEST_F(ValidateTest, AnUnknownPluginsControlCharactersAreShownEscaped) {
  auto r = validate("pipelines:\n  - name: x\n    source: { plugin: \"nosuch\\e]0;title\\a\" }\n"
                    "    sink: { plugin: faulty, config: { path: /tmp/x } }\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown source plugin 'nosuch\\x1b]0;title\\x07'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "a raw ESC reached the terminal";
}

// A known group of keys given a plain value or an empty map was "unknown key": the user
// looked for a typo that was not there.
TEST_F(ValidateTest, AKnownGroupOfKeysGivenAScalarOrAnEmptyMapSaysItExpectsAMap) {
  auto r = validate("metrics: 5\npipelines:\n  - name: x\n    commit: {}\n"
                    "    source: { plugin: counter }\n"
                    "    sink: { plugin: faulty, config: { path: /tmp/x } }\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("top level: key 'metrics' expects a map with some of: listen; got a scalar"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pipeline 'x': key 'commit' expects a map with some of: interval"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("got an empty map"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("unknown key"), std::string::npos) << r.err;
}

// A NUL in a key cut the message short where it was printed.
TEST_F(ValidateTest, ANulInAKeyIsShownEscapedAndTheMessageIsWhole) {
  auto r = validate("pipelines:\n  - name: x\n    source: { plugin: counter, config: { \"co\\0unt\": 1 } }\n"
                    "    sink: { plugin: faulty, config: { path: /tmp/x } }\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown key 'co\\x00unt'"), std::string::npos) << r.err;
}

TEST_F(ValidateTest, UnknownKeyIsNamedWithSuggestion) {
  auto r = validate(R"(pipelines:
  - name: x
    source: { plugin: counter, config: { cuont: 5 } }
    sink: { plugin: faulty, config: { path: /tmp/x } }
)");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(file() + ":4:42:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown key 'cuont' (did you mean 'count'?)"), std::string::npos) << r.err;
}

TEST_F(ValidateTest, UnknownPipelineKeyIsNamed) {
  auto r = validate(R"(pipelines:
  - name: x
    delivry: exactly_once
    source: { plugin: counter }
    sink: { plugin: faulty, config: { path: /tmp/x } }
)");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(file() + ":4:5:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown key 'delivry' (did you mean 'delivery'?)"), std::string::npos)
      << r.err;
}

TEST_F(ValidateTest, WrongTypeIsNamed) {
  auto r = validate(R"(pipelines:
  - name: x
    source: { plugin: counter, config: { count: lots } }
    sink: { plugin: faulty, config: { path: /tmp/x, abort.probability: [1] } }
    commit: { interval: soon }
)");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(file() + ":4:49: error: pipeline 'x' source (counter): key 'count' expects "
                                "an integer, got 'lots'"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("key 'abort.probability' expects a number, got a list"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("key 'commit.interval' expects a duration"), std::string::npos) << r.err;
}

// strtod turns an underflow into 0 (or a subnormal) with ERANGE: a value nobody wrote.
TEST_F(ValidateTest, NumberOutOfRangeIsNamed) {
  auto r = validate(R"(pipelines:
  - name: x
    source: { plugin: counter }
    sink: { plugin: faulty, config: { path: /tmp/x, abort.probability: 1e-400 } }
)");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find(file() + ":5:72: error: pipeline 'x' sink (faulty): key "
                                "'abort.probability' expects a number, got '1e-400'"),
            std::string::npos)
      << r.err;
}

// Opening a FIFO for reading waits for a writer: validate (and a reload) hung there,
// deaf to SIGTERM. A FIFO, as a pipeline file or behind ${file:}, is refused at once.
TEST_F(ValidateTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  ASSERT_EQ(::mkfifo((dir / "secret.fifo").c_str(), 0600), 0);
  auto r = run("timeout 20 " + exactly_bin() + " validate " + [&] {
    write_file(dir / "p.yaml", "plugin.path: [" + kPluginPath + "]\npipelines:\n  - name: x\n"
               "    source: { plugin: counter }\n"
               "    sink: { plugin: faulty, config: { path: \"${file:" + (dir / "secret.fifo").string() +
               "}\" } }\n");
    return file();
  }(), dir);
  EXPECT_EQ(r.exit_code, 2) << "124 = hung\n" << r.err;
  EXPECT_NE(r.err.find("cannot read " + (dir / "secret.fifo").string() +
                       ": is a FIFO (named pipe), not a regular file"),
            std::string::npos)
      << r.err;

  fs::create_directory(dir / "conf");
  ASSERT_EQ(::mkfifo((dir / "conf" / "q.yaml").c_str(), 0600), 0);
  r = run("timeout 20 " + exactly_bin() + " validate " + (dir / "conf").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << "124 = hung\n" << r.err;
  EXPECT_NE(r.err.find((dir / "conf" / "q.yaml").string() +
                       ": error: cannot read file: is a FIFO (named pipe), not a regular file"),
            std::string::npos)
      << r.err;
}

// A tag some other tool expands (`!env NAME`) was read as the text after it: the sink
// wrote a file named OUT_PATH. YAML's own tags still mean what they say.
TEST_F(ValidateTest, AnUnknownYamlTagIsRefusedAndYamlsOwnAreKept) {
  auto r = validate(R"(pipelines:
  - name: x
    source: { plugin: counter, config: { count: !!int 5 } }
    sink: { plugin: faulty, config: { path: !env OUT_PATH } }
)");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find(file() + ":5:45: error: unknown YAML tag '!env'"), std::string::npos) << r.err;
  r = validate(R"(pipelines:
  - name: x
    source: { plugin: counter, config: { count: !!int 5 } }
    sink: { plugin: faulty, config: { path: !!str /tmp/x } }
)");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(ValidateTest, MissingRequiredKeyIsNamed) {
  auto r = validate(R"(pipelines:
  - name: x
    source: { plugin: counter }
    sink:
      plugin: faulty
      config: { seed: 3 }
)");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(file() + ":7:15: error: pipeline 'x' sink (faulty): missing required key 'path'"),
            std::string::npos)
      << r.err;
}

// An empty required string or list is refused by the plugin at open(); validate says so
// first, at the value's line.
TEST_F(ValidateTest, EmptyRequiredValueIsNamed) {
  auto r = validate(R"(pipelines:
  - name: x
    source: { plugin: counter }
    sink: { plugin: faulty, config: { path: "" } }
  - name: y
    source: { plugin: counter }
    sink: { plugin: faulty, config: { path: "  ", seed: 2 } }
)");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find(file() + ":5:45: error: pipeline 'x' sink (faulty): key 'path' is "
                                "required and must not be empty"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(file() + ":8:45: error: pipeline 'y' sink (faulty): key 'path' is "
                                "required and must not be empty"),
            std::string::npos)
      << r.err;
}

TEST_F(ValidateTest, MissingSourceAndNameAreNamed) {
  auto r = validate(R"(pipelines:
  - sink: { plugin: faulty, config: { path: /tmp/x } }
)");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing required key 'name'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("missing required key 'source'"), std::string::npos) << r.err;
}

TEST_F(ValidateTest, DuplicatePipelineNameAcrossFilesNamesBoth) {
  write_file(dir / "a.yaml", "plugin.path: [" + kPluginPath + "]\n" + kGood);
  write_file(dir / "b.yaml", kGood);
  auto r = run(exactly_bin() + " validate " + dir.string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find((dir / "b.yaml").string() + ":2:5: error: duplicate pipeline name 'good' "
                                                    "(first defined at " +
                       (dir / "a.yaml").string() + ":3:5)"),
            std::string::npos)
      << r.err;
}

TEST_F(ValidateTest, BadEnumValueListsAllowed) {
  auto r = validate(R"(pipelines:
  - name: x
    delivery: twice
    source: { plugin: counter }
    sink: { plugin: faulty, config: { path: /tmp/x } }
)");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(file() + ":4:15:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("must be one of: at_least_once, exactly_once; got 'twice'"),
            std::string::npos)
      << r.err;
}

TEST_F(ValidateTest, MissingFileIsAnError) {
  auto r = run(exactly_bin() + " validate " + (dir / "nope.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nope.yaml: error: no such file or directory"), std::string::npos) << r.err;
}

TEST_F(ValidateTest, RunRefusesInvalidFileAndStartsNothing) {
  write_file(dir / "p.yaml", "plugin.path: [" + kPluginPath + "]\npipelines:\n  - name: x\n"
                             "    source: { plugin: counter, config: { count: -x } }\n"
                             "    sink: { plugin: faulty, config: { path: " +
                                 (dir / "out").string() + " } }\n");
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nothing started"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST_F(ValidateTest, PluginCreateErrorNamesKeyLocation) {
  // reject-every refuses every <= 0 at create time; the host maps the key back.
  write_file(dir / "p.yaml", "plugin.path: [" + kPluginPath + "]\npipelines:\n  - name: x\n"
                             "    source: { plugin: counter }\n"
                             "    transforms:\n      - plugin: reject-every\n"
                             "        config: { every: 0 }\n"
                             "    sink: { plugin: faulty, config: { path: " +
                                 (dir / "out").string() + " } }\n");
  auto r = run(exactly_bin() + " run " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find(file() + ":7:26: error: transforms[0] (reject-every): key 'every': must be "
                                "positive"),
            std::string::npos)
      << r.out << r.err;
}

}  // namespace

// Hostile files (issue "hardening"): each is refused with file:line and nothing runs.
TEST_F(ValidateTest, AnAliasBombIsRefusedBeforeItExpands) {
  // 9 levels of 9 aliases: ~387 million nodes once expanded.
  std::string bomb = "bomb:\n  l0: &l0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    std::string prev = "*l" + std::to_string(i - 1);
    bomb += "  l" + std::to_string(i) + ": &l" + std::to_string(i) + " [" + prev;
    for (int j = 1; j < 9; ++j) bomb += ", " + prev;
    bomb += "]\n";
  }
  auto r = validate(bomb + kGood);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // Located inside the bomb (lines 2-11), not at the top of the file.
  auto at = r.err.find(": error: the document expands to more than 100000 YAML nodes");
  ASSERT_NE(at, std::string::npos) << r.err;
  auto line_start = r.err.find(file() + ":");
  ASSERT_NE(line_start, std::string::npos) << r.err;
  int line = std::stoi(r.err.substr(line_start + file().size() + 1));
  EXPECT_GE(line, 2) << r.err;
  EXPECT_LE(line, 11) << r.err;
}

TEST_F(ValidateTest, AnAliasInsideItsOwnAnchorIsRefusedNotRecursedForever) {
  // Found by the fuzzer (tests/fuzz/crashers/config_load/alias-inside-its-own-anchor.yaml):
  // the node contains itself, so walking it never ends.
  auto r = validate("loop: &a [x, *a]\n" + std::string(kGood));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(file() + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("an alias inside its own anchor"), std::string::npos) << r.err;
}

TEST_F(ValidateTest, ASecondDocumentIsRefusedNotIgnored) {
  std::string second = kGood;
  second.replace(second.find("name: good"), 10, "name: other");
  auto r = validate(std::string(kGood) + "---\n" + second);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // plugin.path + 10 lines of kGood, then "---" on line 12: the second document's map.
  EXPECT_NE(r.err.find(file() + ":13:1: error: a second YAML document starts here"), std::string::npos)
      << r.err;
}

TEST_F(ValidateTest, AnIndentedFirstKeyIsLocated) {
  write_file(dir / "p.yaml", "  pipelines:\n    - name: x\nplugin.path: [" + kPluginPath + "]\n");
  auto r = run(exactly_bin() + " validate " + file(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(file() + ":1:3: error: the first key is indented"), std::string::npos) << r.err;
}

TEST_F(ValidateTest, ACommitIntervalOfZeroIsRefused) {
  std::string y = kGood;
  y.insert(y.find("    source:"), "    commit: { interval: 0ms }\n");
  auto r = validate(y);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("key 'commit.interval' must be positive"), std::string::npos) << r.err;
}

// Durations past 100 years overflowed where they become microseconds or deadlines: a
// commit interval of 107000d passed and then spun at full CPU handling nothing, and
// 999999999999d came out as a negative number.
TEST_F(ValidateTest, DurationsAndSizesPastTheirMaximumAreRefused) {
  for (const std::string bad : {"107000d", "999999999999d", "36501d", "9223372036854775807"}) {
    std::string y = kGood;
    y.insert(y.find("    source:"), "    commit: { interval: " + bad + " }\n");
    auto r = validate(y);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("key 'commit.interval' expects a duration such as 500ms, 5s, 2m, 1h (at most 36500d), got '" + bad + "'"),
              std::string::npos) << r.err;
  }
  auto r = validate("shutdown.timeout: 999999999999d\n" + std::string(kGood));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("key 'shutdown.timeout' expects a duration such as 500ms, 5s, 2m, 1h (at most 36500d), got '999999999999d'"),
            std::string::npos) << r.err;
  // A stop needs time to commit: 1ms was accepted and made the next reload exit 3 (QA).
  for (const auto& [short_one, ms] : {std::pair{"1ms", "1"}, {"999ms", "999"}, {"0s", "0"}}) {
    auto s = validate("shutdown.timeout: " + std::string(short_one) + "\n" + std::string(kGood));
    EXPECT_EQ(s.exit_code, 2) << short_one << ": " << s.err;
    EXPECT_NE(s.err.find("p.yaml:2:19: error: shutdown.timeout is " + std::string(ms) + " ms: it must be at least 1s"),
              std::string::npos) << s.err;
  }
  auto one = validate("shutdown.timeout: 1s\n" + std::string(kGood));
  EXPECT_EQ(one.exit_code, 0) << one.err;
  std::string y = kGood;
  y.insert(y.find("    source:"), "    commit: { interval: 36500d }\n");
  auto ok = validate(y);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// Plugins get settings as C strings: a NUL cut a value short unseen (a file sink's path
// "out\0.evil" wrote to "out", and its commit record over the output).
TEST_F(ValidateTest, ANulCharacterInAValueIsRefusedWithItsKey) {
  std::string y = kGood;
  y.replace(y.find("path: /tmp/x"), std::string("path: /tmp/x").size(), "path: \"/tmp/x\\0.evil\"");
  auto r = validate(y);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(file() + ":11:15: error: key 'path'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("key 'path': the value contains a NUL character"), std::string::npos) << r.err;
}

// As --plugin-path: a directory that is not there was searched for nothing, silently.
TEST_F(ValidateTest, APluginPathThatIsNoDirectoryIsRefused) {
  write_file(dir / "p.yaml", "plugin.path: [" + kPluginPath + ", ./nonexistent]\n" + std::string(kGood));
  auto r = run(exactly_bin() + " validate " + file(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(file() + ":1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("plugin.path './nonexistent': " + (dir / "nonexistent").string() + " is not a directory"),
            std::string::npos) << r.err;
}

// Named twice (a directory and a file in it, or the same path twice), a file is read once:
// it used to report each of its pipelines as defined already, at its own line.
TEST_F(ValidateTest, AFileNamedTwiceIsReadOnce) {
  write_file(dir / "p.yaml", "plugin.path: [" + kPluginPath + "]\n" + std::string(kGood));
  auto r = run(exactly_bin() + " validate " + file() + " " + dir.string() + " " + file(), dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 pipeline(s) in 1 file(s) are valid"), std::string::npos) << r.out;
}

// A dead-letter sink that is given but refused gets its own error only: it was also
// reported as "no 'errors.dead-letter' sink is configured".
TEST_F(ValidateTest, ARefusedDeadLetterSinkIsNotAlsoReportedMissing) {
  std::string y = kGood;
  y.insert(y.find("    source:"), "    errors: { policy: dead-letter, dead-letter: { plugin: counter } }\n");
  auto r = validate(y);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("errors.dead-letter: unknown sink plugin 'counter'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("sink is configured"), std::string::npos) << r.err;
  y = kGood;
  y.insert(y.find("    source:"), "    errors: { policy: dead-letter }\n");
  r = validate(y);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("errors.policy is dead-letter but no 'errors.dead-letter' sink is configured"),
            std::string::npos) << r.err;
}

TEST_F(ValidateTest, ZeroConsecutiveAbortsIsRefused) {
  std::string y = kGood;
  y.insert(y.find("    source:"), "    errors: { max.consecutive.aborts: 0 }\n");
  auto r = validate(y);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("key 'errors.max.consecutive.aborts' must be positive"), std::string::npos) << r.err;
}

TEST_F(ValidateTest, MetricsListenMustBeAnAddressAndPort) {
  for (const std::string bad : {"127.0.0.1:99999", "not-an-address", "''", "a b:80"}) {
    auto r = validate("metrics.listen: " + bad + "\n" + kGood);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find(file() + ":2:17: error: metrics.listen"), std::string::npos) << bad << ": " << r.err;
  }
  // IPv6: the metrics server (Debian's civetweb) has none; refused here, not at run.
  for (const std::string v6 : {"'[::1]:9464'", "'[::]:9464'", "'::1:9464'"}) {
    auto r = validate("metrics.listen: " + v6 + "\n" + kGood);
    EXPECT_EQ(r.exit_code, 2) << v6 << ": " << r.err;
    EXPECT_NE(r.err.find("IPv6 addresses are not supported"), std::string::npos) << v6 << ": " << r.err;
  }
  auto ok = validate("metrics.listen: 127.0.0.1:0\n" + std::string(kGood));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  // Set twice to different values: the message quotes both (it quoted the second twice).
  write_file(dir / "other.yaml", "metrics.listen: 127.0.0.1:19464\n");
  write_file(dir / "p.yaml", "plugin.path: [" + kPluginPath + "]\nmetrics.listen: 127.0.0.1:19465\n" + kGood);
  auto twice = run(exactly_bin() + " validate " + (dir / "other.yaml").string() + " " + file(), dir);
  EXPECT_EQ(twice.exit_code, 2) << twice.err;
  EXPECT_NE(twice.err.find("metrics.listen '127.0.0.1:19465': it is set to '127.0.0.1:19464' already at"),
            std::string::npos) << twice.err;
  // A third file agreeing with the first is not the one in error: the second is, once.
  write_file(dir / "third.yaml", "metrics.listen: 127.0.0.1:19464\n");
  auto three = run(exactly_bin() + " validate " + (dir / "other.yaml").string() + " " + file() + " " +
                       (dir / "third.yaml").string(), dir);
  EXPECT_EQ(three.exit_code, 2) << three.err;
  EXPECT_EQ(three.err.find((dir / "third.yaml").string() + ":1"), std::string::npos) << three.err;
  EXPECT_NE(three.err.find("1 error(s)"), std::string::npos) << three.err;
  // The same address written two ways is one setting.
  write_file(dir / "other.yaml", "metrics.listen: 19465\n");
  auto same = run(exactly_bin() + " validate " + (dir / "other.yaml").string() + " " + file(), dir);
  EXPECT_EQ(same.exit_code, 0) << same.err;
}

TEST_F(ValidateTest, APipelineNameMustBePrintableWithoutSpaces) {
  // What was written, shown as text (UTF-8 as itself), and the first character refused by
  // its code point: a zero-width space is invisible, so the code point is what shows it.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\"\"", "got an empty name"},
      {"\"two\\nlines\"", "got 'two\\x0alines': byte 0x0a at character 4 is not one of them"},
      {"\"with space\"", "got 'with space': ' ' (U+0020) at character 5 is not one of them"},
      {"\"zero\\u200Bwidth\"", "got 'zero\u200Bwidth': '\u200B' (U+200B) at character 5 is not one of them"},
      {"caf\u00e9", "got 'caf\u00e9': '\u00e9' (U+00E9) at character 4 is not one of them"},
      // Every message names it by its index (one was cut at the NUL: "pipeline 'p").
      {"\"p\\0x\"", "got 'p\\x00x': byte 0x00 at character 2 is not one of them"},
  };
  for (const auto& [bad, said] : cases) {
    std::string y = kGood;
    y.replace(y.find("name: good"), 10, "name: " + bad);
    auto r = validate(y);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("key 'name' must be 1-200 letters, digits, '-', '_' or '.' (it names logs, "
                         "metrics and state), " + said),
              std::string::npos)
        << bad << ": " << r.err;
    EXPECT_EQ(r.err.find("pipeline 'p\n"), std::string::npos) << r.err;
  }
}

TEST_F(ValidateTest, AnUnknownLogLevelIsRefused) {
  write_file(dir / "p.yaml", "plugin.path: [" + kPluginPath + "]\n" + kGood);
  for (const std::string bad : {"--log-level loud", "--log-level DEBUG", "--log-level ''", "--log-level"}) {
    auto r = run(exactly_bin() + " run --no-watch " + bad + " " + file(), dir);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--log-level"), std::string::npos) << bad << ": " << r.err;
  }
}

TEST_F(ValidateTest, PluginsWithAMissingPluginPathIsAnError) {
  auto r = run(exactly_bin() + " plugins --plugin-path /nonexistent/plugins", dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("'/nonexistent/plugins' is not a directory"), std::string::npos) << r.err;
}

// YAML merge keys share settings between pipelines, with "x-" top-level blocks to hold the
// anchors (yaml-cpp reads `<<` as a plain key: it was refused as "unknown key '<<.every'").
TEST_F(ValidateTest, MergeKeysShareSettingsAndAnOwnKeyWinsThenTheFirstMap) {
  auto r = validate(R"(x-three: &three { every: 3 }
x-bad: &bad { every: nope }
pipelines:
  - name: merged
    source: { plugin: counter, config: { count: 10 } }
    transforms:
      - plugin: reject-every
        config: { <<: *bad, every: 3 }
      - plugin: reject-every
        config: { <<: [*three, *bad] }
    sink: &sink
      plugin: faulty
      config:
        path: /tmp/x
  - <<: { name: second, source: { plugin: counter, config: { count: 1 } } }
    sink: *sink
)");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ok  merged"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok  second"), std::string::npos) << r.out;
}

TEST_F(ValidateTest, AMergedBadValueIsNamedWhereItWasWritten) {
  auto r = validate(R"(x-bad: &bad
  every: nope
pipelines:
  - name: merged
    source: { plugin: counter, config: { count: 10 } }
    transforms:
      - plugin: reject-every
        config: { <<: *bad }
    sink: { plugin: faulty, config: { path: /tmp/x } }
)");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // plugin.path is line 1: `every: nope` is line 3, its value at column 10.
  EXPECT_NE(r.err.find(file() + ":3:10: error: pipeline 'merged' transforms[0] (reject-every): key "
                                "'every' expects an integer, got 'nope'"),
            std::string::npos)
      << r.err;
}

// A value under an anchor is checked wherever the anchor is used; an error in it (here a
// ${file:} that cannot be read, whose message names no pipeline) is reported once, not
// once per use (QA: the same line twice, "2 error(s)").
TEST_F(ValidateTest, AnErrorUnderAnAnchorUsedTwiceIsReportedOnce) {
  auto r = validate(R"(x-count: &count
  count: ${file:/nonexistent/exactly-count}
pipelines:
  - name: one
    source: { plugin: counter, config: { <<: *count } }
    sink: { plugin: faulty, config: { path: /tmp/x } }
  - name: two
    source: { plugin: counter, config: { <<: *count } }
    sink: { plugin: faulty, config: { path: /tmp/x } }
)");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const std::string line = file() + ":3:";
  size_t n = 0;
  for (size_t at = r.err.find(line); at != std::string::npos; at = r.err.find(line, at + 1)) ++n;
  EXPECT_EQ(n, 1u) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/exactly-count"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 error(s)"), std::string::npos) << r.err;
}

TEST_F(ValidateTest, AMergeKeyThatNamesNoMapIsRefusedAtItsLine) {
  // The third gives `<<` twice: refused at the second (line 9).
  for (const std::string bad : {"<<: 3", "<<: [*m, 3]", "<<: *m\n        <<: *m"}) {
    auto r = validate("x-m: &m { count: 1 }\npipelines:\n  - name: x\n    source:\n      plugin: counter\n"
                      "      config:\n        " + bad + "\n    sink: { plugin: faulty, config: { path: /tmp/x } }\n");
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    const std::string line = bad.find('\n') == std::string::npos ? ":8:9" : ":9:9";
    EXPECT_NE(r.err.find(file() + line + ": error: merge key '<<'"), std::string::npos) << bad << ": " << r.err;
  }
}

TEST_F(ValidateTest, OnlyTopLevelKeysStartingWithXAreIgnored) {
  auto ok = validate("x-anything: { whatever: [1, 2], env: \"${NOT_SET_ANYWHERE}\" }\n" + std::string(kGood));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  auto bad = validate("y-anything: 1\n" + std::string(kGood));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("unknown key 'y-anything'"), std::string::npos) << bad.err;
}

// A round open longer than the kafka sink's transaction.timeout is aborted by the broker
// (reported as fencing), so under steady input nothing ever committed; and a restart
// backoff that starts above its maximum.
TEST_F(ValidateTest, ACommitIntervalAtTheTransactionTimeoutAndAnInvertedBackoffAreRefused) {
  auto r = validate(R"(pipelines:
  - name: t
    delivery: exactly_once
    commit: { interval: 20s }
    restart: { backoff.initial: 10s, backoff.max: 1s }
    source: { plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, topics: [a], group.id: g } }
    sink: { plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, topic: b } }
)");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(file() + ":5:25: error: pipeline 't': commit.interval (20000 ms) must be shorter than "
                                "the sink's transaction.timeout (10000 ms)"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find(file() + ":6:33: error: pipeline 't': restart.backoff.initial (10000 ms) is above "
                                "restart.backoff.max (1000 ms)"),
            std::string::npos) << r.err;
  // Raised to fit: valid.
  auto ok = validate(R"(pipelines:
  - name: t
    delivery: exactly_once
    commit: { interval: 20s }
    source: { plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, topics: [a], group.id: g } }
    sink: { plugin: kafka, config: { bootstrap.servers: 127.0.0.1:1, topic: b, transaction.timeout: 60s } }
)");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}
