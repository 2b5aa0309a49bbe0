// The summary `exactly run` prints at the end, on the README's own quickstart (real .so
// plugins, the kafka plugin's embedded cluster): its rate is records per second of the
// active span, not of the whole run, which here is mostly a group join and an idle wait.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

struct Row {
  long long in = -1;
  double elapsed = -1, rate = -1;
  std::string after;  // the lines under the row, up to the next row
};

Row row_of(const std::string& out, const std::string& name) {
  Row r;
  std::istringstream lines(out);
  std::string line;
  bool in_row = false;
  while (std::getline(lines, line)) {
    if (in_row) {
      if (line.rfind("    ", 0) != 0) break;
      r.after += line + "\n";
      continue;
    }
    std::istringstream f(line);
    std::string n, state, elapsed, rate, unit;
    long long in = 0, out_n = 0, dropped = 0, rejected = 0, commits = 0, aborts = 0;
    if (!(f >> n >> state >> in >> out_n >> dropped >> rejected >> commits >> aborts >> elapsed >>
          rate >> unit) ||
        n != name || unit != "r/s" || elapsed.empty() || elapsed.back() != 's')
      continue;
    r.in = in;
    r.elapsed = std::stod(elapsed.substr(0, elapsed.size() - 1));
    r.rate = std::stod(rate);
    in_row = true;
  }
  return r;
}

}  // namespace

TEST(RunSummary, TheRateIsOverTheActiveSpanAndTheSpanIsShown) {
  auto dir = temp_dir("summary");
  std::string yaml = read_file(fs::path(EXACTLY_SOURCE_DIR) / "configs/quickstart.yaml");
  const std::string state = "/tmp/exactly-quickstart";
  for (size_t at; (at = yaml.find(state)) != std::string::npos;)
    yaml.replace(at, state.size(), (dir / "state").string());
  write_file(dir / "quickstart.yaml", yaml);
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "quickstart.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  Row d = row_of(r.out, "dedupe-events");
  ASSERT_EQ(d.in, 50000) << r.out;
  // The source waits out `stop.when.idle: 3s` after the last record before the run ends.
  EXPECT_GE(d.elapsed, 3.0) << r.out;
  std::smatch m;
  const std::regex active_line(
      R"(    active: ([0-9.]+)s, from the first record at ([0-9.]+)s to the last commit with records at ([0-9.]+)s)");
  ASSERT_TRUE(std::regex_search(d.after, m, active_line)) << r.out;
  const double active = std::stod(m[1]), first = std::stod(m[2]), last = std::stod(m[3]);
  EXPECT_GT(active, 0) << r.out;
  EXPECT_NEAR(active, last - first, 0.011) << r.out;
  // The idle wait came after it: 3 s from the last record polled, of which the round
  // that committed it (500 ms interval) took at most about half a second.
  EXPECT_LE(last, d.elapsed - 2.0) << r.out;
  // The rate is the records over that span (both printed rounded: 2 decimals, whole r/s).
  EXPECT_NEAR(d.rate, d.in / active, d.in / active * 0.05 + 1) << r.out;
  EXPECT_GT(d.rate, 1.5 * d.in / d.elapsed) << r.out;
  // The lines under it are the plugins' counters, as whole numbers; a stage's CPU (the
  // host's, fractional seconds per stage) is for /metrics only.
  EXPECT_NE(d.after.find("kafka_sink_records_total"), std::string::npos) << r.out;
  EXPECT_EQ(d.after.find("stage_cpu_seconds_total"), std::string::npos) << r.out;
  EXPECT_FALSE(std::regex_search(d.after, std::regex(R"(\d\.\d{6})"))) << r.out;
}
