// A pipeline that fails for good at create/open says so on stderr with the reason (not
// only in the final summary and as exactly_pipeline_up 0): issue "hardening".
#include <gtest/gtest.h>

#include "test_util.hpp"

using namespace exactly::test;

TEST(FailureLogging, APipelineFailingInCreateIsLoggedWithItsReason) {
  auto dir = temp_dir("faillog");
  const std::string plugins = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";
  write_file(dir / "p.yaml",
             "plugin.path: [" + plugins + "]\npipelines:\n  - name: t\n"
             "    source: { plugin: counter, config: { count: 10 } }\n"
             "    transforms: [ { plugin: reject-every, config: { every: 0 } } ]\n"
             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
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
