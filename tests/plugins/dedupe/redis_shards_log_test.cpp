// `exactly run` of a pipeline with several tasks makes one dedupe-redis instance per task:
// the stage's "shards ..." line is said once per start, not once per task (QA: every
// start logged it once per task, which read like a stage that had started twice).
#include <gtest/gtest.h>

#include "redis_server.hpp"
#include "test_util.hpp"

using namespace exactly::test;

TEST(RedisShardsLog, SaidOncePerStageNotOncePerTask) {
  RedisServer redis("shards-log");
  auto dir = temp_dir("redis-shards-log");
  write_file(dir / "p.yaml", "pipelines:\n"
                             "  - name: p\n"
                             "    threads: 2\n"
                             "    source: { plugin: generator, config: { count: 4000, partitions: 4 } }\n"
                             "    transforms:\n"
                             "      - plugin: dedupe-redis\n"
                             "        config: { id.json: /messageId, retention.max.age: 1h, shards: [127.0.0.1:" +
                                 std::to_string(redis.port()) + "] }\n"
                             "    sink: { plugin: file, config: { path: " + (dir / "out.jsonl").string() + " } }\n");
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string log = r.out + r.err;
  // Two tasks ran (4 partitions, threads: 2): their batches are counted.
  EXPECT_NE(log.find("task_batches_"), std::string::npos) << log;
  EXPECT_EQ(count_of(log, "dedupe-redis: shards [127.0.0.1:" + std::to_string(redis.port()) + "]"), 1) << log;
}
