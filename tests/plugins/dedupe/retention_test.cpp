// Retention: oldest ids first, by key count, size and age; gauges; reconfigure.
#include <chrono>
#include <thread>

#include "dedupe_fixture.hpp"

namespace dedupe_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<OwnedRecord> events(const std::vector<std::string>& ids, int64_t& offset) {
  std::vector<OwnedRecord> out;
  for (auto& id : ids) out.push_back(event(id, offset++));
  return out;
}

TEST_F(DedupeTest, EvictsOldestFirstByKeyCount) {
  auto& t = start({{"retention.max.keys", "3"}});
  int64_t off = 0;
  EXPECT_THAT(t.process(events({"a", "b", "c", "d", "e"}, off)).kept, ElementsAre(0u, 1u, 2u, 3u, 4u));
  commit_round();
  EXPECT_EQ(metric("dedupe_store_keys"), 3);
  // a and b were the oldest: gone. c, d, e are still known.
  EXPECT_THAT(t.process(events({"e", "d", "c"}, off)).kept, IsEmpty());
  EXPECT_THAT(t.process(events({"b", "a"}, off)).kept, ElementsAre(0u, 1u));
  commit_round();
  // Now b and a are the newest, with e (claimed before them in order c, d, e, b, a).
  EXPECT_EQ(metric("dedupe_store_keys"), 3);
  EXPECT_THAT(t.process(events({"c", "d", "e", "a", "b"}, off)).kept, ElementsAre(0u, 1u));
}

TEST_F(DedupeTest, EvictionSpansRoundsAndSurvivesReopen) {
  auto& t = start({{"retention.max.keys", "4"}});
  int64_t off = 0;
  for (auto ids : std::vector<std::vector<std::string>>{{"a", "b"}, {"c", "d"}, {"e"}, {"f", "g"}}) {
    t.process(events(ids, off));
    commit_round();
  }
  // Claimed a..g in that order; the newest 4 are d, e, f, g.
  EXPECT_EQ(metric("dedupe_store_keys"), 4);
  auto& t2 = start({{"retention.max.keys", "4"}}, {part(0, "events-0", off)});
  EXPECT_THAT(t2.process(events({"g", "f", "e", "d"}, off)).kept, IsEmpty());
  EXPECT_THAT(t2.process(events({"c", "b", "a"}, off)).kept, ElementsAre(0u, 1u, 2u));
}

TEST_F(DedupeTest, EvictionBySizeKeepsTheNewest) {
  auto& t = start({{"retention.max.bytes", "2000"}});
  int64_t off = 0;
  std::vector<std::string> ids;
  for (int i = 0; i < 300; ++i) ids.push_back("id-" + std::to_string(i));
  t.process(events(ids, off));
  commit_round();
  double keys = metric("dedupe_store_keys");
  EXPECT_GT(keys, 10);
  EXPECT_LT(keys, 300);
  // The newest is still known, the oldest is not.
  EXPECT_THAT(t.process(events({"id-299", "id-0"}, off)).kept, ElementsAre(1u));
}

TEST_F(DedupeTest, EvictionByAge) {
  auto& t = start({{"retention.max.age", "300"}});
  int64_t off = 0;
  t.process(events({"old"}, off));
  commit_round();
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  t.process(events({"new"}, off));
  commit_round();
  EXPECT_EQ(metric("dedupe_store_keys"), 1);
  EXPECT_THAT(t.process(events({"new", "old"}, off)).kept, ElementsAre(1u));
}

TEST_F(DedupeTest, WindowGaugeIsTheAgeOfTheOldestKey) {
  auto& t = start();
  int64_t off = 0;
  t.process(events({"a", "b"}, off));
  commit_round();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  t.process(events({"c"}, off));
  commit_round();
  double with_old = metric("dedupe_window_seconds");
  EXPECT_GE(with_old, 0.6);
  // Keep only the newest key: the window becomes the age of round 2.
  ASSERT_TRUE(t.reconfigure({{"id.json", "/messageId"},
                             {"state.dir", dir_.string()},
                             {"rocksdb.block.cache.size", "8388608"},
                             {"rocksdb.write.buffer.size", "4194304"},
                             {"retention.max.keys", "1"}})
                  .is_ok());
  commit_round();
  EXPECT_EQ(metric("dedupe_store_keys"), 1);
  double with_new = metric("dedupe_window_seconds");
  EXPECT_GE(with_new, 0.0);
  EXPECT_LT(with_new, with_old);
  EXPECT_THAT(t.process(events({"c", "a"}, off)).kept, ElementsAre(1u));
}

TEST_F(DedupeTest, ReconfigureChangesRetentionButNotIds) {
  auto& t = start();
  Pairs c = config({{"retention.max.keys", "10"}});
  EXPECT_TRUE(t.reconfigure(c).is_ok());
  Pairs other = config({{"id.json", "/otherId"}});
  auto st = t.reconfigure(other);
  EXPECT_EQ(st.code(), EX_ERR_UNSUPPORTED);
  EXPECT_NE(st.message().find("id"), std::string::npos);
}

TEST_F(DedupeTest, StoreBytesGaugeIsReported) {
  auto& t = start();
  int64_t off = 0;
  t.process(events({"a", "b", "c"}, off));
  commit_round();
  EXPECT_GT(metric("dedupe_store_bytes"), 0);
  EXPECT_EQ(metric("dedupe_store_keys"), 3);
}

}  // namespace
}  // namespace dedupe_test

namespace dedupe_test {
namespace {

// A round's claims go straight into the table of earlier rounds' claims; an abort takes
// them out again and puts back the evicted claims it replaced: what was committed still
// decides, what the aborted round claimed does not, and an evicted id stays evicted.
TEST_F(DedupeTest, AnAbortedRoundReclaimingEvictedIdsLeavesTheCommittedStateAlone) {
  auto& t = start({{"retention.max.keys", "3"}});
  int64_t off = 0;
  EXPECT_THAT(t.process(events({"a", "b", "c", "d", "e"}, off)).kept, ElementsAre(0u, 1u, 2u, 3u, 4u));
  commit_round();  // a and b are evicted; c, d, e are known
  // The round claims a and b again (their evicted claims replaced in place) and many new
  // ids (the table grows), then aborts.
  std::vector<std::string> ids = {"b", "a"};
  for (int i = 0; i < 5000; ++i) ids.push_back("n" + std::to_string(i));
  const int64_t aborted_from = off;
  auto out = t.process(events(ids, off));
  EXPECT_EQ(out.kept.size(), ids.size());
  ASSERT_TRUE(t.abort().is_ok());
  // Replayed from where the aborted round began: the same records claim again.
  off = aborted_from;
  out = t.process(events({"e", "a", "n7", "d"}, off));
  EXPECT_THAT(out.kept, ElementsAre(1u, 2u));  // e and d still known; a and n7 new again
  commit_round();
  EXPECT_THAT(t.process(events({"a", "n7", "b"}, off)).kept, ElementsAre(2u));  // b: still evicted
}

}  // namespace
}  // namespace dedupe_test
