// Host-level settings on reload: metrics.listen and stage.timeout are read once, at
// start, so an edit to them is said in the log (it was silently ignored), while the
// pipelines' part of the same edit is applied.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

std::string yaml(const fs::path& out, const std::string& listen, int batch) {
  return "metrics: { listen: \"" + listen + "\" }\n"
         "pipelines:\n"
         "  - name: gen\n"
         "    commit: { interval: 100ms }\n"
         "    source: { plugin: generator, config: { count: 0, rate: 500, batch.size: " +
         std::to_string(batch) + " } }\n"
         "    sink: { plugin: file, config: { path: " + out.string() + ", fsync: false } }\n";
}

TEST(ReloadHostSettings, AMetricsAddressEditIsSaidToNeedARestart) {
  fs::path dir = temp_dir("reload-host-settings");
  fs::path conf = dir / "p.yaml", out = dir / "out.jsonl", log = dir / "host.log";
  write_file(conf, yaml(out, "127.0.0.1:0", 50));
  Child host({exactly_bin(), "run", conf.string()}, log);
  ASSERT_TRUE(wait_for_text(log, "started 1 pipeline", 20)) << read_file(log);
  write_file(conf, yaml(out, "127.0.0.1:1", 60));
  ASSERT_TRUE(wait_for_text(log, "applied", 20)) << read_file(log);
  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0) << read_file(log);
  const std::string text = read_file(log);
  EXPECT_NE(text.find(conf.string() + ":1:20: metrics.listen changed from '127.0.0.1:0' to "
                      "'127.0.0.1:1': the metrics address is bound once, at start"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("reconfigured=gen"), std::string::npos) << text;  // the rest applied
}

// The order keys are written in is not part of a definition: a reformatted (or
// key-sorted) file leaves the pipeline running, as an unchanged one.
TEST(ReloadHostSettings, KeysWrittenInAnotherOrderLeaveThePipelineUnchanged) {
  fs::path dir = temp_dir("reload-key-order");
  fs::path conf = dir / "p.yaml", out = dir / "out.jsonl", log = dir / "host.log";
  auto with = [&](const std::string& source_config) {
    return "pipelines:\n  - name: gen\n    commit: { interval: 100ms }\n"
           "    source: { plugin: generator, config: " + source_config + " }\n"
           "    sink: { plugin: file, config: { path: " + out.string() + ", fsync: false } }\n";
  };
  write_file(conf, with("{ count: 0, rate: 500, batch.size: 50 }"));
  Child host({exactly_bin(), "run", conf.string()}, log);
  ASSERT_TRUE(wait_for_text(log, "started 1 pipeline", 20)) << read_file(log);
  write_file(conf, with("{ batch.size: 50, rate: 500, count: 0 }"));
  ASSERT_TRUE(wait_for_text(log, "applied", 20)) << read_file(log);
  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0) << read_file(log);
  const std::string text = read_file(log);
  EXPECT_NE(text.find("unchanged=gen"), std::string::npos) << text;
  EXPECT_EQ(text.find("restarted=gen"), std::string::npos) << text;
}

// A pipeline a reload renamed (removed, and added under its new name) keeps its
// plugins' counters in the summary: its row came without a counter line.
TEST(ReloadHostSettings, APipelineRenamedByAReloadKeepsItsCountersInTheSummary) {
  fs::path dir = temp_dir("reload-rename-summary");
  fs::path conf = dir / "p.yaml", out = dir / "out.jsonl", log = dir / "host.log";
  auto named = [&](const std::string& name) {
    return "pipelines:\n  - name: " + name + "\n    commit: { interval: 100ms }\n"
           "    source: { plugin: generator, config: { count: 0, rate: 500, batch.size: 10 } }\n"
           "    sink: { plugin: file, config: { path: " + out.string() + ", fsync: false } }\n";
  };
  write_file(conf, named("before"));
  Child host({exactly_bin(), "run", conf.string()}, log);
  ASSERT_TRUE(wait_for_text(log, "started 1 pipeline", 20)) << read_file(log);
  ASSERT_TRUE(wait_for_text(log, "assigned", 20)) << read_file(log);
  write_file(conf, named("after"));
  ASSERT_TRUE(wait_for_text(log, "added=after removed=before", 20)) << read_file(log);
  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0) << read_file(log);
  const std::string text = read_file(log);
  for (const std::string name : {"before", "after"}) {
    const size_t row = text.find("\n" + name + " ");
    ASSERT_NE(row, std::string::npos) << name << "\n" << text;
    // The lines under the row, up to the next one that is not indented.
    size_t end = text.find("\n", row + 1);
    while (end != std::string::npos && text.compare(end + 1, 4, "    ") == 0) end = text.find("\n", end + 1);
    const std::string block = text.substr(row, end == std::string::npos ? std::string::npos : end - row);
    EXPECT_NE(block.find("    file_sink_records_total"), std::string::npos) << name << "\n" << text;
  }
}

}  // namespace
