// A record is untrusted input: the host must survive whatever a record holds. Through
// the real binary: file -> filter (regex) -> file, where one record's field is 1 MiB.
// With std::regex (the filter's engine before RE2) the host died of SIGSEGV on it, its
// recursive backtracking out of stack; now the run ends normally with every record
// where the predicate puts it.
#include <gtest/gtest.h>

#include "test_util.hpp"

using namespace exactly::test;

TEST(HostileRecord, AMegabyteFieldThroughARegexFilterNeitherKillsNorStallsTheHost) {
  fs::path dir = temp_dir("hostile-record");
  const std::string huge = std::string(1 << 20, 'a');
  write_file(dir / "in.jsonl",
             "{\"id\":1,\"type\":\"click\"}\n"
             "{\"id\":2,\"type\":\"" + huge + "\"}\n"
             "{\"id\":3,\"type\":\"Click\"}\n"
             "{\"id\":4,\"type\":\"" + huge + "b\"}\n"
             "{\"id\":5,\"type\":\"view\"}\n");
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: lower\n"
             "    source: { plugin: file, config: { path: " + (dir / "in.jsonl").string() + " } }\n"
             "    transforms:\n"
             "      - plugin: filter\n"
             "        config: { field: /type, op: regex, value: '^[a-z]*$' }\n"
             "    sink: { plugin: file, config: { path: " + (dir / "out.jsonl").string() + ", fsync: false } }\n");
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << "signal " << r.signal << "\n" << r.err.substr(0, 4000);
  auto out = lines_of(read_file(dir / "out.jsonl"));
  ASSERT_EQ(out.size(), 4u) << "expected ids 1, 2, 4, 5; the run said:\n" << r.err.substr(0, 4000);
  EXPECT_EQ(out[0], "{\"id\":1,\"type\":\"click\"}");
  // Compared whole, printed short: a failure should not print a megabyte.
  EXPECT_TRUE(out[1] == "{\"id\":2,\"type\":\"" + huge + "\"}") << out[1].substr(0, 40);
  EXPECT_TRUE(out[2] == "{\"id\":4,\"type\":\"" + huge + "b\"}") << out[2].substr(0, 40);
  EXPECT_EQ(out[3], "{\"id\":5,\"type\":\"view\"}");
}
