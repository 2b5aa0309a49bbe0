// A library on the plugin path that crashes or hangs while it loads (its static
// initializers, its descriptor), before any pipeline uses it: `plugins` and `validate`
// died with exit 139 and no word, or hung (QA). Now the crash names the library and what
// it was doing, and a hang is named when the deadline ends the command. Through the real
// binary and real .so files (tests/host/fixtures/misloading_plugin.cpp).
#include <gtest/gtest.h>

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

// dlopen's own reason, without the unrelated errno text Boost appended to it ("undefined
// symbol: x): Bad file descriptor", QA).
TEST(Misloading, AnUndefinedSymbolIsSaidWithoutAnUnrelatedErrno) {
  auto r = run(exactly_bin() + " plugins --plugin-path " + dir_of(4));
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("undefined symbol: exactly_misloading_not_there"), std::string::npos) << all;
  EXPECT_EQ(all.find("Bad file descriptor"), std::string::npos) << all;
}

}  // namespace
