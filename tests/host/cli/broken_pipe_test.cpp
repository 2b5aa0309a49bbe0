// `exactly run ... | head` (or a log collector that dies): the reader of the host's
// stdout and stderr goes away while the pipeline runs. The host must finish its work and
// exit 0, not die of SIGPIPE at its next log line or at the summary (exit 141, round lost).
#include <gtest/gtest.h>

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
  // The faulty sink writes each value on a line and its committed position last.
  auto lines = lines_of(read_file(dir / "out.txt"));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "#pos 20000");
  EXPECT_EQ(lines.size(), 20001u);
}

}  // namespace
