// The kafka source's priority levels through the real binary: `exactly run` with a YAML
// `priority:` list, a real broker, and a file sink whose lines show the order the records
// went through the pipeline.
#include <gtest/gtest.h>

#include <set>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "kafka_test_util.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

std::string pipeline_yaml(const std::string& group, const std::vector<std::string>& levels,
                          const std::string& extra_source_keys, const fs::path& out) {
  std::string list;
  for (const auto& t : levels) list += (list.empty() ? "" : ", ") + t;
  return "pipelines:\n"
         "  - name: prio\n"
         "    delivery: at_least_once\n"
         "    source:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: " + kafka_bootstrap() + "\n        group.id: " + group + "\n"
         "        priority: [" + list + "]\n        batch.size: 100\n        stop.when.idle: 3s\n" +
         extra_source_keys +
         "    sink: { plugin: file, config: { path: " + out.string() + ", fsync: false } }\n";
}

}  // namespace

TEST(KafkaPriorityRun, BacklogOnThreeTopicsComesOutHighThenNormalThenLow) {
  const std::string tag = unique_name("prio-run");
  const std::vector<std::string> levels = {tag + ".high", tag + ".normal", tag + ".low"};
  const std::vector<std::string> prefix = {"h", "n", "l"};
  for (size_t i = 0; i < levels.size(); ++i) {
    kafka_tool("create-topic --topic " + levels[i] + " --partitions 2");
    kt::produce(kafka_bootstrap(), levels[i], 0, 3000, prefix[i]);
  }
  fs::path dir = temp_dir("prio-run");
  write_file(dir / "p.yaml", pipeline_yaml(tag + "-g", levels, "        priority.min.share: 0\n",
                                           dir / "out.jsonl"));
  auto r = run("timeout 120 " + exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << tail_of(r.err, 4000);
  auto lines = lines_of(read_file(dir / "out.jsonl"));
  ASSERT_EQ(lines.size(), 9000u) << "every record once (at_least_once, no failure)";
  std::set<std::string> distinct(lines.begin(), lines.end());
  EXPECT_EQ(distinct.size(), 9000u);
  auto level_of = [&](const std::string& v) {
    for (size_t i = 0; i < prefix.size(); ++i)
      if (v.rfind(prefix[i], 0) == 0) return static_cast<int>(i);
    return -1;
  };
  size_t out_of_order = 0;
  for (size_t i = 1; i < lines.size(); ++i) out_of_order += level_of(lines[i]) < level_of(lines[i - 1]);
  EXPECT_EQ(out_of_order, 0u) << "the file holds every high line, then every normal, then every low";
  EXPECT_EQ(level_of(lines.front()), 0);
  EXPECT_EQ(level_of(lines.back()), 2);
}

TEST(KafkaPriorityRun, PriorityWithTopicsIsAConfigErrorNamingTheKey) {
  const std::string tag = unique_name("prio-cfg");
  fs::path dir = temp_dir("prio-cfg");
  write_file(dir / "p.yaml", pipeline_yaml(tag + "-g", {tag + ".a", tag + ".b"},
                                           "        topics: [" + tag + ".a]\n", dir / "out.jsonl"));
  auto r = run("timeout 60 " + exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("priority"), std::string::npos) << tail_of(r.err, 4000);
  EXPECT_NE(r.err.find("not both"), std::string::npos) << tail_of(r.err, 4000);
}
