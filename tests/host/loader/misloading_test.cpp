// A library on the plugin path that crashes or hangs while it loads (its static
// initializers, its descriptor), before any pipeline uses it: `plugins` and `validate`
// died with exit 139 and no word, or hung (QA). Now the crash names the library and what
// it was doing, and a hang is named when the deadline ends the command. Through the real
// binary and real .so files (tests/host/fixtures/misloading_plugin.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

std::string dir_of(int misbehave) {
  return std::string(EXACTLY_BUILD_DIR) + "/test-plugins-misloading-" + std::to_string(misbehave);
}

TEST(Misloading, ACrashInAStaticInitializerNamesTheLibrary) {
  auto r = run(exactly_bin() + " plugins --plugin-path " + dir_of(1));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("fatal SIGSEGV in plugin library " + dir_of(1) +
                       "/exactly_misloading_1.so, during load (its static initializers)"),
            std::string::npos)
      << r.err;
}

TEST(Misloading, ACrashInTheDescriptorNamesTheLibraryInValidateToo) {
  auto dir = temp_dir("misloading");
  write_file(dir / "p.yaml", "plugin.path: [" + dir_of(2) + "]\npipelines: []\n");
  auto r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("fatal SIGSEGV in plugin library " + dir_of(2) +
                       "/exactly_misloading_2.so, during exactly_plugin_descriptor"),
            std::string::npos)
      << r.err;
}

TEST(Misloading, AHangInTheDescriptorIsNamedWhenTheDeadlineEndsValidate) {
  auto dir = temp_dir("misloading");
  write_file(dir / "p.yaml", "plugin.path: [" + dir_of(3) + "]\npipelines: []\n");
  auto r = run(exactly_bin() + " validate --stage-timeout 2s " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("plugin library " + dir_of(3) + "/exactly_misloading_3.so: exactly_plugin_descriptor running for"),
            std::string::npos)
      << r.err;
}

// `run` read the file's timeouts only once every library had loaded: a library hanging
// in its descriptor was named after the default 60 s, and a stop waited the default 60 s
// too, saying "the pipelines did not stop" though none had started (QA).
TEST(Misloading, AHangInTheDescriptorIsHeldToTheFilesTimeoutsByRun) {
  auto dir = temp_dir("misloading");
  write_file(dir / "p.yaml", "plugin.path: [" + dir_of(3) + "]\nstage.timeout: 1s\nshutdown.timeout: 2s\n"
                             "pipelines: []\n");
  Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "log.txt");
  ASSERT_TRUE(wait_for_text(dir / "log.txt", "exactly_plugin_descriptor has not returned for", 20))
      << read_file(dir / "log.txt");
  host.kill(SIGTERM);
  int code = -1;
  for (int i = 0; i < 400 && !host.exited(&code); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (code == -1) host.kill(SIGKILL);
  const std::string log = read_file(dir / "log.txt");
  EXPECT_EQ(code, 3) << log;
  EXPECT_NE(log.find("(stage.timeout 1 s)"), std::string::npos) << log;
  EXPECT_NE(log.find("the first config load did not finish within shutdown.timeout (2 s); still running:\n"
                     "    plugin library " + dir_of(3) + "/exactly_misloading_3.so: exactly_plugin_descriptor running for"),
            std::string::npos) << log;
  EXPECT_NE(log.find("(no pipeline had started)"), std::string::npos) << log;
}

// dlopen's own reason, without the unrelated errno text Boost appended to it ("undefined
// symbol: x): Bad file descriptor", QA).
TEST(Misloading, AnUndefinedSymbolIsSaidWithoutAnUnrelatedErrno) {
  auto r = run(exactly_bin() + " plugins --plugin-path " + dir_of(4));
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("undefined symbol: exactly_misloading_not_there"), std::string::npos) << all;
  EXPECT_EQ(all.find("Bad file descriptor"), std::string::npos) << all;
}

}  // namespace
