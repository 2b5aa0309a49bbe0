// Inputs fuzz_config_load found (tests/fuzz/crashers/config_load/), through the real
// binary: each must end in a config error, never a hang or a crash.
#include <gtest/gtest.h>

#include <string>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

// yaml-cpp 0.7's LoadAll never returns on a ',' outside a flow collection.
TEST(ValidateMalformedYaml, AStrayCommaIsAnErrorNotAHang) {
  for (const std::string text : {std::string(","), std::string("# c\n,\n"), std::string("---\n,"),
                                 std::string("pipelines: []\n---\n,\n")}) {
    fs::path dir = temp_dir("validate-comma");
    write_file(dir / "p.yaml", text);
    auto r = run("timeout 20 " + exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
    EXPECT_EQ(r.exit_code, 2) << "input: " << text << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("malformed YAML"), std::string::npos) << r.err;
  }
}

// yaml-cpp stops at its depth limit with the message "bad file" (QA: 50,000 '['); the
// error says what is wrong.
TEST(ValidateMalformedYaml, NestingTooDeepIsSaidAsSuch) {
  for (const std::string text : {std::string(50000, '['), "pipelines: " + std::string(50000, '{')}) {
    fs::path dir = temp_dir("validate-deep");
    write_file(dir / "p.yaml", text);
    auto r = run("timeout 20 " + exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("p.yaml:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("malformed YAML: nested deeper than"), std::string::npos) << r.err;
  }
}

TEST(ValidateMalformedYaml, TheKeptCrashersAreRefused) {
  const fs::path kept = fs::path(EXACTLY_SOURCE_DIR) / "tests" / "fuzz" / "crashers" / "config_load";
  for (auto& e : fs::directory_iterator(kept)) {
    fs::path dir = temp_dir("validate-crasher");
    fs::copy_file(e.path(), dir / "p.yaml");
    auto r = run("timeout 20 " + exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << e.path() << " exit " << r.exit_code << "\n" << r.err;
  }
}

}  // namespace
