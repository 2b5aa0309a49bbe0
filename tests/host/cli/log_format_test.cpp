// The log through the real binary: --log-format json writes one JSON object per line
// (python3's json module must read every line) carrying the same levels, scopes and
// message text as the text format, and secrets are masked in both.
#include <gtest/gtest.h>

#include "test_util.hpp"

#include <regex>
#include <set>
#include <tuple>

using namespace exactly::test;

namespace {

const std::string kPlugins = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";
const std::string kFromFile = "s3cr3t-from-a-file", kLiteral = "hunter2-literal";

using Line = std::tuple<std::string, std::string, std::string>;  // level, scope, message

// A pipeline whose transform logs a secret read from a file and one written under a
// secret-named key.
fs::path write_pipeline(const fs::path& dir) {
  write_file(dir / "secret.txt", kFromFile + "\n");
  write_file(dir / "p.yaml",
             "plugin.path: [" + kPlugins + "]\npipelines:\n  - name: t\n"
             "    source: { plugin: counter, config: { count: 20, batch.size: 10 } }\n"
             "    transforms: [ { plugin: say, config: { message: \"${file:" + (dir / "secret.txt").string() +
                 "}\", password: " + kLiteral + " } } ]\n"
             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
  return dir / "p.yaml";
}

// "<utc time> <LEVEL> [<scope>] message" -> (level in lower case, scope, message).
std::set<Line> text_lines(const std::string& err) {
  static const std::regex line(R"((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (DEBUG|INFO |WARN |ERROR) \[([^\]]*)\] (.*))");
  std::set<Line> out;
  for (const auto& l : lines_of(err)) {
    std::smatch m;
    EXPECT_TRUE(std::regex_match(l, m, line)) << "not a log line: " << l;
    if (m.empty()) continue;
    std::string level = m[2].str();
    level.erase(level.find_last_not_of(' ') + 1);
    for (auto& c : level) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.insert({level, m[3].str(), m[4].str()});
  }
  return out;
}

// Each line through python3's json.loads; its fields back as tab-separated text.
std::set<Line> json_lines(const fs::path& dir, const std::string& err) {
  write_file(dir / "json.log", err);
  auto r = run("python3 -c '"
               "import json, re, sys\n"
               "for n, line in enumerate(open(sys.argv[1]), 1):\n"
               "    o = json.loads(line)\n"
               "    assert re.fullmatch(r\"\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z\", o[\"time\"]), o\n"
               "    assert o[\"level\"] in (\"debug\", \"info\", \"warn\", \"error\"), o\n"
               "    if o[\"scope\"].startswith(\"pipeline:\"): assert o[\"pipeline\"] == o[\"scope\"][9:], o\n"
               "    else: assert \"pipeline\" not in o, o\n"
               "    assert set(o) <= {\"time\", \"level\", \"scope\", \"pipeline\", \"message\"}, o\n"
               "    print(o[\"level\"], o[\"scope\"], o[\"message\"].replace(\"\\n\", \"\\\\n\"), sep=\"\\t\")\n"
               "' " + (dir / "json.log").string(),
               dir);
  EXPECT_EQ(r.exit_code, 0) << "a log line is not JSON: " << r.err << "\n" << err;
  std::set<Line> out;
  for (const auto& l : lines_of(r.out)) {
    auto a = l.find('\t'), b = l.find('\t', a + 1);
    out.insert({l.substr(0, a), l.substr(a + 1, b - a - 1), l.substr(b + 1)});
  }
  return out;
}

}  // namespace

TEST(LogFormat, JsonLinesCarryTheTextFormatsMessagesAndMaskSecrets) {
  // Each run in a directory of its own: the second must not resume where the first ended.
  auto text_dir = temp_dir("log-text"), dir = temp_dir("log-json");
  auto text = run(exactly_bin() + " run --no-watch " + write_pipeline(text_dir).string(), text_dir);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  auto json = run(exactly_bin() + " run --no-watch --log-format json " + write_pipeline(dir).string(), dir);
  ASSERT_EQ(json.exit_code, 0) << json.err;

  auto from_text = text_lines(text.err), from_json = json_lines(dir, json.err);
  EXPECT_EQ(from_json, from_text);
  const Line said{"info", "pipeline:t", "say: message=**** password=****"};
  EXPECT_EQ(from_json.count(said), 1u) << json.err;
  EXPECT_EQ(from_text.count(said), 1u) << text.err;
  for (const auto& s : {kFromFile, kLiteral}) {
    EXPECT_EQ((text.out + text.err).find(s), std::string::npos) << s;
    EXPECT_EQ((json.out + json.err).find(s), std::string::npos) << s;
  }
  // The summary stays a table on stdout.
  EXPECT_NE(json.out.find("finished"), std::string::npos) << json.out;
}

// A config the host refuses at start is the error an operator most needs to find: with
// --log-format json it comes as JSON lines too (it was plain text), file:line:col kept.
TEST(LogFormat, AStartUpConfigErrorIsJsonLinesInTheJsonFormat) {
  auto dir = temp_dir("log-json-config");
  write_file(dir / "p.yaml", "plugin.path: [" + kPlugins + "]\npipelines:\n  - name: t\n"
                             "    source: { plugin: counter, config: { cuont: 20 } }\n"
                             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
  auto r = run(exactly_bin() + " run --no-watch --log-format json " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const auto lines = json_lines(dir, r.err);
  bool named = false, counted = false;
  for (const auto& [level, scope, message] : lines) {
    named |= level == "error" && scope == "config" &&
             message.find((dir / "p.yaml").string() + ":4:") == 0 && message.find("unknown key 'cuont'") != std::string::npos;
    counted |= message == "1 error(s); nothing started";
  }
  EXPECT_TRUE(named) << r.err;
  EXPECT_TRUE(counted) << r.err;
}

TEST(LogFormat, TheLevelAppliesToPluginLinesInBothFormats) {
  auto dir = temp_dir("log-level");
  const auto p = write_pipeline(dir).string();
  for (const std::string format : {"text", "json"}) {
    auto r = run(exactly_bin() + " run --no-watch --log-level warn --log-format " + format + " " + p, dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("say: "), std::string::npos) << format << ": " << r.err;
  }
}

// Text from outside (here a plugin's message; a file or partition name alike) cannot
// forge an entry of the text log: its line break continues the entry on an indented line,
// and other control characters are shown as \xNN.
TEST(LogFormat, ALineBreakInAMessageContinuesItsEntryAndCannotForgeAnother) {
  auto dir = temp_dir("log-forge");
  write_file(dir / "p.yaml",
             "plugin.path: [" + kPlugins + "]\npipelines:\n  - name: t\n"
             "    source: { plugin: counter, config: { count: 2 } }\n"
             "    transforms: [ { plugin: say, config: { message: \"one\\n2026-01-01T00:00:00.000Z "
             "ERROR [host] forged\\r\\nbell\\a\" } } ]\n"
             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  static const std::regex entry(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO |WARN |ERROR) \[[^\]]*\] .*)");
  for (const auto& l : lines_of(r.err))
    EXPECT_TRUE(std::regex_match(l, entry) || l.rfind("    ", 0) == 0) << "a line that is neither an entry nor its continuation: " << l;
  EXPECT_NE(r.err.find("say: message=one\n    2026-01-01T00:00:00.000Z ERROR [host] forged\n    bell\\x07"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("\n2026-01-01T00:00:00.000Z"), std::string::npos) << r.err;
}
