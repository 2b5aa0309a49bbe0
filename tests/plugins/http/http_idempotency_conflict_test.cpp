// Issue 11 item 6 through the real host: the same idempotency key with different content
// is counted and routed by the dedupe stage in front of the http sink (its on.conflict
// semantics), so the API never sees two different bodies under one key; an exact repeat
// is dropped as a duplicate; nothing is lost (the conflicting record is in the
// dead-letter file with the reason).
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "http_sink_fixture.hpp"

using namespace exactly::test;

TEST(HttpIdempotencyConflict, SameKeyDifferentContentGoesToTheDeadLetterSinkNotToTheApi) {
  HttpTestServer srv;
  fs::path dir = temp_dir("http-conflict");
  write_file(dir / "orders.jsonl",
             "{\"orderId\":\"o1\",\"amount\":5}\n"
             "{\"orderId\":\"o2\",\"amount\":7}\n"
             "{\"orderId\":\"o1\",\"amount\":5}\n"   // the same order again: a duplicate
             "{\"orderId\":\"o1\",\"amount\":9}\n"   // same key, other content: a conflict
             "{\"orderId\":\"o3\",\"amount\":1}\n");
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: orders\n"
             "    delivery: at_least_once\n"
             "    errors: { policy: dead-letter, dead-letter: { plugin: file, config: { path: " +
                 (dir / "conflicts.jsonl").string() + " } } }\n"
             "    source: { plugin: file, config: { path: " + (dir / "orders.jsonl").string() + " } }\n"
             "    transforms:\n"
             "      - plugin: dedupe\n"
             "        config: { id.json: /orderId, on.conflict: reject, state.dir: " +
                 (dir / "dedupe").string() + " }\n"
             "    sink:\n      plugin: http\n      config:\n"
             "        url: " + srv.base() + "/rewards/{/orderId}\n"
             "        idempotency.key: /orderId\n");
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  std::map<std::string, std::vector<std::string>> bodies;  // key -> bodies the API got
  for (const auto& q : srv.requests()) bodies[q.header("idempotency-key")].push_back(q.body);
  ASSERT_EQ(bodies.size(), 3u) << r.err;
  for (const auto& [key, b] : bodies) EXPECT_EQ(b.size(), 1u) << key << " sent more than once";
  EXPECT_EQ(bodies["o1"][0], "{\"orderId\":\"o1\",\"amount\":5}");

  auto dlq = lines_of(read_file(dir / "conflicts.jsonl"));
  ASSERT_EQ(dlq.size(), 1u) << r.out << r.err;
  EXPECT_NE(dlq[0].find("\"amount\":9"), std::string::npos) << dlq[0];
  // Counted: the summary prints the dedupe stage's counters.
  std::smatch m;
  const std::string all = r.out + r.err;
  ASSERT_TRUE(std::regex_search(all, m, std::regex(R"(dedupe_conflicts_total\s+(\d+))"))) << all;
  EXPECT_EQ(m[1], "1");
  ASSERT_TRUE(std::regex_search(all, m, std::regex(R"(dedupe_duplicates_total\s+(\d+))"))) << all;
  EXPECT_EQ(m[1], "1");
}
