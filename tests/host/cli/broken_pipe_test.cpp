// `exactly run ... | head` (or a log collector that dies): the reader of the host's
// stdout and stderr goes away while the pipeline runs. The host must finish its work and
// exit 0, not die of SIGPIPE at its next log line or at the summary (exit 141, round lost).
#include <gtest/gtest.h>

#include <set>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

const std::string kPlugins = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

TEST(BrokenPipe, TheHostOutlivesTheReaderOfItsOutput) {
  auto dir = temp_dir("broken-pipe");
  write_file(dir / "p.yaml",
             "plugin.path: [" + kPlugins + "]\npipelines:\n  - name: t\n"
             "    commit: { interval: 10ms }\n"
             "    source: { plugin: counter, config: { count: 20000, batch.size: 100 } }\n"
             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
  // head takes the first byte of the first log line and leaves: every later write fails.
  auto r = run("bash -c '" + exactly_bin() + " run --no-watch " + (dir / "p.yaml").string() +
                   " 2>&1 | head -c 1 >/dev/null; exit ${PIPESTATUS[0]}'",
               dir);
  EXPECT_EQ(r.exit_code, 0) << "141 = killed by SIGPIPE\n" << r.out << r.err;
  // The faulty sink writes each round's values, a line each, then "#pos <committed>": one
  // round or several (10 ms rounds, however fast this machine runs), every value once.
  auto lines = lines_of(read_file(dir / "out.txt"));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "#pos 20000");
  std::set<std::string> values;
  size_t value_lines = 0;
  for (const auto& l : lines)
    if (l.rfind("#pos ", 0) != 0) {
      ++value_lines;
      values.insert(l);
    }
  EXPECT_EQ(value_lines, 20000u);
  EXPECT_EQ(values.size(), 20000u) << "a value written twice";
}

}  // namespace
