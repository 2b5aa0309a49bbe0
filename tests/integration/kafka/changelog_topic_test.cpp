// The dedupe changelog topic through the real binary and a real broker: created with
// what it needs when missing, grown when it has fewer partitions than the input; one
// that would lose claims (a delete cleanup policy) is refused with a message that says
// why and how to fix it, and nothing is processed.
#include <gtest/gtest.h>

#include <algorithm>

#include "kafka_env.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

struct Topics {
  std::string in, out, group, changelog;
  fs::path dir;
};

Topics make(const std::string& tag) {
  Topics s;
  s.in = unique_name(tag + "-in");
  s.out = unique_name(tag + "-out");
  s.group = unique_name(tag + "-g");
  s.changelog = unique_name(tag + "-changelog");
  s.dir = temp_dir(tag);
  kafka_tool("create-topic --topic " + s.in + " --partitions 4");
  kafka_tool("create-topic --topic " + s.out + " --partitions 4");
  kafka_tool("produce --keyed --topic " + s.in + " --count 2000 --partitions 4 --seed 3");
  return s;
}

// Runs the pipeline until its input is idle for 3 s (or it fails); returns the run.
RunResult run_pipeline(const Topics& s) {
  std::string b = kafka_bootstrap();
  write_file(s.dir / "p.yaml",
             "pipelines:\n"
             "  - name: cl\n"
             "    delivery: exactly_once\n"
             "    commit: { interval: 300ms }\n"
             "    restart: { backoff.initial: 100ms, backoff.max: 200ms }\n"
             "    source:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: " + b + "\n        group.id: " + s.group + "\n"
             "        topics: [" + s.in + "]\n        stop.when.idle: 3s\n"
             "    transforms:\n      - plugin: dedupe\n        config:\n"
             "          id.json: /messageId\n          state.dir: " + (s.dir / "dedupe").string() +
             "\n          changelog.topic: " + s.changelog + "\n"
             "    sink:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: " + b + "\n        topic: " + s.out + "\n"
             "        partitioning: input\n        state.dir: " + (s.dir / "sink").string() + "\n");
  return run("timeout 120 " + exactly_bin() + " run --no-watch " + (s.dir / "p.yaml").string(), s.dir);
}

long long count_out(const Topics& s) {
  auto r = kafka_tool("count --read-committed --stall-timeout-s 5 --topic " + s.out, false);
  auto lines = lines_of(r.out);
  return r.exit_code == 0 && !lines.empty() ? std::stoll(lines.back()) : -1;
}

TEST(KafkaChangelog, AMissingChangelogIsCreatedCompactedWithOnePartitionPerInputPartition) {
  Topics s = make("cl-new");
  auto r = run_pipeline(s);
  EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 4000);
  EXPECT_NE(r.err.find("created changelog topic " + s.changelog +
                       " (4 partitions, cleanup.policy=compact, min.compaction.lag.ms=900000)"),
            std::string::npos)
      << r.err.substr(0, 4000);
  // As the broker has it: compacted, and young segments (live claims) left to the writer.
  auto c = kafka_tool("topic-config --topic " + s.changelog, false);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto has = [&](const std::string& line) {
    auto l = lines_of(c.out);
    return std::find(l.begin(), l.end(), line) != l.end();
  };
  EXPECT_TRUE(has("cleanup.policy=compact")) << c.out;
  EXPECT_TRUE(has("min.compaction.lag.ms=900000")) << c.out;
  EXPECT_TRUE(has("segment.bytes=67108864")) << c.out;
  auto e = kafka_tool("end-offsets --topic " + s.changelog, false);
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_GT(json_number(e.out, "total_end"), 0) << e.out;  // the claims are in it
}

// Partition p of the input keeps its claims in partition p of the changelog: one with
// fewer partitions than the input (made by hand, or before the input grew) is grown.
TEST(KafkaChangelog, AChangelogWithFewerPartitionsThanTheInputIsGrown) {
  Topics s = make("cl-parts");
  kafka_tool("create-topic --topic " + s.changelog + " --partitions 2 --config cleanup.policy=compact");
  auto r = run_pipeline(s);
  EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 4000);
  EXPECT_NE(r.err.find("changelog topic " + s.changelog + " grown from 2 to 4 partitions (input topic " +
                       s.in + " has 4)"),
            std::string::npos)
      << r.err.substr(0, 4000);
  auto e = kafka_tool("end-offsets --topic " + s.changelog, false);
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("\"partition\":3"), std::string::npos) << e.out;
  EXPECT_EQ(count_out(s), 2000);
}

TEST(KafkaChangelog, AChangelogThatDeletesOldRecordsIsRefused) {
  Topics s = make("cl-policy");
  kafka_tool("create-topic --topic " + s.changelog + " --partitions 4 --config cleanup.policy=delete");
  auto r = run_pipeline(s);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("has cleanup.policy=delete"), std::string::npos) << r.err.substr(0, 4000);
  // The fix is a command that runs as printed: it names the cluster.
  EXPECT_NE(r.err.find("kafka-configs.sh --bootstrap-server " + kafka_bootstrap() + " --alter"),
            std::string::npos) << r.err.substr(0, 4000);
  EXPECT_NE(r.err.find("--add-config cleanup.policy=compact"), std::string::npos);
  EXPECT_EQ(count_out(s), 0);
}

}  // namespace
