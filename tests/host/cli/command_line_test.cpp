// The command line through the real binary (CLI11): both spellings of every option that
// takes a value, and refusals (unknown option or command, bad or missing value) that
// name the option and exit 2 before anything starts.
#include <gtest/gtest.h>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

const std::string kPlugins = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

// A pipeline whose transform logs a line at info and whose source logs at debug.
void write_pipeline(const fs::path& dir) {
  write_file(dir / "p.yaml",
             "plugin.path: [" + kPlugins + "]\npipelines:\n  - name: t\n"
             "    source: { plugin: counter, config: { count: 5, batch.size: 5 } }\n"
             "    transforms: [ { plugin: say, config: { message: hello } } ]\n"
             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
}

struct Refusal {
  std::string args;  // after `exactly`
  std::string names; // what the message must name
};

}  // namespace

TEST(CommandLine, OptionValuesMayFollowAnEqualsSignOrASpace) {
  auto dir = temp_dir("cli-spell");
  write_pipeline(dir);
  const std::string p = (dir / "p.yaml").string();
  for (const std::string level : {"--log-level=warn", "--log-level warn"}) {
    auto r = run(exactly_bin() + " run --no-watch " + level + " " + p, dir);
    ASSERT_EQ(r.exit_code, 0) << level << ": " << r.err;
    // warn hides the info lines (the transform's "say:" and the host's "started").
    EXPECT_EQ(r.err.find("say: message=hello"), std::string::npos) << level << ": " << r.err;
    EXPECT_EQ(r.err.find(" INFO "), std::string::npos) << level << ": " << r.err;
  }
  for (const std::string format : {"--log-format=json", "--log-format json"}) {
    auto r = run(exactly_bin() + " run " + format + " --no-watch " + p, dir);
    ASSERT_EQ(r.exit_code, 0) << format << ": " << r.err;
    EXPECT_NE(r.err.find("\"message\":\"say: message=hello password=\""), std::string::npos)
        << format << ": " << r.err;
  }
  // Options after the paths, too.
  auto r = run(exactly_bin() + " run " + p + " --log-level=info --no-watch", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("say: message=hello"), std::string::npos) << r.err;

  for (const std::string dirs : {"--plugin-path=" + kPlugins, "--plugin-path " + kPlugins}) {
    r = run(exactly_bin() + " plugins --json " + dirs, dir);
    ASSERT_EQ(r.exit_code, 0) << dirs << ": " << r.err;
    EXPECT_NE(r.out.find("\"name\":\"say\""), std::string::npos) << dirs << ": " << r.out;
  }
}

TEST(CommandLine, BadOptionsAreRefusedWithTheOptionNamedAndExitCode2) {
  auto dir = temp_dir("cli-bad");
  write_pipeline(dir);
  const std::string p = (dir / "p.yaml").string();
  const std::vector<Refusal> cases = {
      {"run --no-watch --log-level=loud " + p, "--log-level"},
      {"run --no-watch --log-level INFO " + p, "--log-level"},
      {"run --no-watch --log-level", "--log-level needs a value"},
      {"run --no-watch --log-format=xml " + p, "--log-format"},
      {"run --no-watch --log-format", "--log-format needs a value"},
      // `=` and nothing: the path after it is not taken as the value.
      {"run --no-watch --log-level= " + p, "--log-level needs a value (nothing after '=')"},
      {"validate --stage-timeout= " + p, "--stage-timeout needs a value"},
      {"run --no-watch --colour " + p, "--colour"},
      {"run --no-watch=false " + p, "--no-watch is a flag and takes no value"},
      {"validate --strict " + p, "--strict"},
      {"plugins --plugin-path", "--plugin-path needs a value"},
      {"plugins --plugin-path=/nonexistent/plugins", "'/nonexistent/plugins' is not a directory"},
      {"plugins --json extra", "extra"},
      {"plugins --json --markdown", "--markdown"},
      {"test --update " + p, "--update"},
      {"--verbose", "--verbose"},
      {"deploy " + p, "unknown command 'deploy'"},
  };
  for (const auto& c : cases) {
    auto r = run(exactly_bin() + " " + c.args, dir);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << c.args << ": " << r.err;
    // Refused before anything ran.
    EXPECT_FALSE(fs::exists(dir / "out.txt")) << c.args;
  }
  // No path at all: the command's own message.
  auto r = run(exactly_bin() + " run --no-watch", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give at least one file or directory"), std::string::npos) << r.err;
}

TEST(CommandLine, HelpAndVersion) {
  auto r = run(exactly_bin() + " --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* c : {"exactly run", "exactly validate", "exactly plugins", "exactly test", "--log-format"})
    EXPECT_NE(r.out.find(c), std::string::npos) << c << ": " << r.out;
  r = run(exactly_bin() + " run --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* o : {"--log-level", "--log-format", "--no-watch"})
    EXPECT_NE(r.out.find(o), std::string::npos) << o << ": " << r.out;
  // A mistake beside --help is refused, not hidden behind the help (CLI11 stops at --help).
  for (const std::string args : {"--help --bogus", "run --help --bogus", "run --bogus --help",
                                 "validate -h --strict", "run --help --log-level=loud"}) {
    r = run(exactly_bin() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out << r.err;
    EXPECT_TRUE(r.err.find("--bogus") != std::string::npos || r.err.find("--strict") != std::string::npos ||
                r.err.find("--log-level") != std::string::npos)
        << args << ": " << r.err;
  }
  r = run(exactly_bin() + " validate --stage-timeout 5s --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--stage-timeout"), std::string::npos) << r.out;
  r = run(exactly_bin() + " --version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("exactly ", 0), 0u) << r.out;
  r = run(exactly_bin());
  EXPECT_EQ(r.exit_code, 2);
}

// A directory of pipeline files this user cannot list is said as such: it was "no
// pipeline files found", as if empty (QA: /etc/exactly at 0750 read by another user). As
// root the check runs the binary as nobody (root reads any directory), from a copy that
// nobody can reach.
TEST(CommandLine, ADirectoryThatCannotBeListedIsSaidNotCalledEmpty) {
  auto dir = temp_dir("unlisted");
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  const fs::path conf = dir / "conf";
  fs::create_directory(conf);
  write_file(conf / "p.yaml", "pipelines: []\n");
  std::string prefix;
  std::string bin = exactly_bin();
  if (geteuid() == 0) {
    fs::copy_file(exactly_bin(), dir / "exactly");
    bin = (dir / "exactly").string();
    prefix = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
    fs::permissions(conf, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  } else {
    fs::permissions(conf, fs::perms::owner_write | fs::perms::owner_exec);
  }
  auto r = run(prefix + bin + " validate " + conf.string());
  fs::permissions(conf, fs::perms::owner_all);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(conf.string() + ": error: cannot read the directory: Permission denied"), std::string::npos)
      << r.out << r.err;
  EXPECT_EQ(r.err.find("no pipeline files found"), std::string::npos) << r.err;
}
