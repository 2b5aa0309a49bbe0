// The kafka source's priority levels against a REAL Kafka broker (the suite's, or one this
// binary starts with tests/tools/kafka-broker.sh): three topics with backlog, read through
// the real .so; the order the records come out in is measured.
#include "kafka_test_util.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

using exactly::testing::FakeHost;
using exactly::testing::Library;
using exactly::testing::OwnedRecord;
using exactly::testing::SourceHarness;
namespace fs = std::filesystem;

namespace {

Library& lib() {
  static Library l(kt::plugin_path());
  return l;
}

class KafkaPriority : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { broker_.start("exactly-kafka-prio"); }
  static void TearDownTestSuite() { broker_.stop(); }
  void SetUp() override { ASSERT_FALSE(broker_.bootstrap.empty()) << "no broker: " << broker_.error; }
  static const std::string& servers() { return broker_.bootstrap; }

  static kt::SuiteBroker broker_;
};
kt::SuiteBroker KafkaPriority::broker_;

struct LevelRun {
  std::vector<int> levels;  // level of each record, in the order the source handed them out
  std::map<std::string, double> metrics;
  int64_t first_ms[3] = {-1, -1, -1};  // after open, for the log
  double max_paused[3] = {0, 0, 0};      // kafka_source_priority_paused seen during the run
  int64_t last_high_ms = -1;
};

// Three topics (2 partitions each) with `per_level` records each, all produced before the
// source starts; read with `priority: [high, normal, low]` until idle. Checks that every
// record came exactly once and in offset order per partition.
LevelRun read_levels(const std::string& bootstrap, int per_level, const std::string& share,
                     const std::string& batch = "200", int work_ms = 0) {
  LevelRun run;
  const std::string tag = kt::unique("prio");
  const std::vector<std::string> topics = {tag + ".high", tag + ".normal", tag + ".low"};
  for (const auto& t : topics) {
    kt::create_topic(bootstrap, t, 2);
    kt::produce(bootstrap, t, 0, per_level, t.substr(tag.size() + 1, 1));
  }
  FakeHost h;
  kt::Pairs cfg = {{"bootstrap.servers", bootstrap}, {"group.id", tag + "-g"},
                   {"batch.size", batch}, {"stop.when.idle", "3000"}};
  for (const auto& t : topics) cfg.emplace_back("priority", t);
  if (!share.empty()) cfg.emplace_back("priority.min.share", share);
  SourceHarness src(lib(), "kafka", cfg, &h);
  EXPECT_TRUE(src.ok()) << src.create_status().message();
  if (!src.ok()) return run;
  const int64_t t0 = kt::now_ms();
  EXPECT_TRUE(src.open().is_ok());
  std::map<std::pair<int32_t, int32_t>, int64_t> next;  // (level, partition number) -> offset
  bool eoi = false;
  const int64_t end = kt::now_ms() + 50000;
  while (!eoi && kt::now_ms() < end) {
    // Like a pipeline doing some work per batch (here ~50k records/s at batch 100): with
    // nothing to do, the harness drains high's whole backlog from one fetch response in a
    // few milliseconds, before librdkafka's first fetch of the other levels is back, and
    // there is no order to measure.
    std::this_thread::sleep_for(std::chrono::milliseconds(work_ms));
    auto batch = src.poll(100, &eoi);
    for (size_t l = 0; l < topics.size(); ++l) {
      auto it = h.metrics.find("kafka_source_priority_paused{topic=" + topics[l] + "}");
      if (it != h.metrics.end()) run.max_paused[l] = std::max(run.max_paused[l], it->second);
    }
    for (auto& r : batch) {
      int level = -1;
      int32_t number = -1;
      for (auto& p : h.assigned)
        if (p.id == r.partition) {
          for (size_t i = 0; i < topics.size(); ++i)
            if (p.topic == topics[i]) level = static_cast<int>(i);
          number = p.number;
        }
      EXPECT_GE(level, 0) << "a record of an unknown partition " << r.partition;
      int64_t& want = next[{level, number}];
      EXPECT_EQ(r.offset, want) << "level " << level << " partition " << number
                                << ": records skipped or repeated";
      want = r.offset + 1;
      run.levels.push_back(level);
      if (level >= 0 && run.first_ms[level] < 0) run.first_ms[level] = kt::now_ms() - t0;
      if (level == 0) run.last_high_ms = kt::now_ms() - t0;
    }
  }
  EXPECT_TRUE(eoi) << "not drained within 50 s";
  for (int l = 0; l < 3; ++l)
    EXPECT_EQ(std::count(run.levels.begin(), run.levels.end(), l), per_level) << "level " << l;
  run.metrics = h.metrics;
  std::printf("first record of each level after %lld / %lld / %lld ms; high drained after %lld ms\n",
              static_cast<long long>(run.first_ms[0]), static_cast<long long>(run.first_ms[1]),
              static_cast<long long>(run.first_ms[2]), static_cast<long long>(run.last_high_ms));
  return run;
}

size_t last_of(const std::vector<int>& v, int level) {
  for (size_t i = v.size(); i-- > 0;)
    if (v[i] == level) return i;
  return v.size();
}

size_t count_in(const std::vector<int>& v, int level, size_t from, size_t to) {
  return static_cast<size_t>(std::count(v.begin() + static_cast<long>(from), v.begin() + static_cast<long>(to), level));
}

}  // namespace

TEST_F(KafkaPriority, WithoutAShareHighDrainsBeforeNormalBeforeLow) {
  LevelRun r = read_levels(servers(), 4000, "0", "200", 2);
  ASSERT_EQ(r.levels.size(), 12000u);
  size_t out_of_order = 0;
  for (size_t i = 1; i < r.levels.size(); ++i) out_of_order += r.levels[i] < r.levels[i - 1];
  EXPECT_EQ(out_of_order, 0u) << "high, then normal, then low; first high at "
                              << std::find(r.levels.begin(), r.levels.end(), 0) - r.levels.begin();
  EXPECT_EQ(r.max_paused[0], 0) << "the highest level is never paused";
  EXPECT_EQ(r.max_paused[1], 1) << "normal was paused in librdkafka while high had backlog";
  EXPECT_EQ(r.max_paused[2], 1) << "low was paused in librdkafka while others had backlog";
}

TEST_F(KafkaPriority, UnderBacklogOnAllLevelsEachLowerLevelStillGetsItsMinimumShare) {
  const double share = 0.1;
  // Small batches: a lower level's buffer (4 batches) covers a small part of its share,
  // so it is paused and resumed many times while high drains.
  LevelRun r = read_levels(servers(), 8000, "0.1", "100", 2);
  ASSERT_EQ(r.levels.size(), 24000u);
  const size_t high_end = last_of(r.levels, 0), normal_end = last_of(r.levels, 1);
  const size_t low_end = last_of(r.levels, 2);
  std::printf("high drained at record %zu, normal at %zu, low at %zu\n", high_end, normal_end, low_end);
  EXPECT_LT(high_end, normal_end);
  EXPECT_LT(normal_end, low_end);
  // While high had backlog, normal and low each got about their share (counted per poll,
  // so allow a margin), not more. Counted from the record by which every level's fetcher
  // had delivered (librdkafka starts partitions' fetchers one by one; on this tiny
  // backlog that start-up is a large part of high's time), which must come before high
  // is drained: no level waits for the others to finish.
  size_t all_started = 0;
  for (int level : {0, 1, 2}) {
    size_t first = static_cast<size_t>(std::find(r.levels.begin(), r.levels.end(), level) - r.levels.begin());
    all_started = std::max(all_started, first);
  }
  std::printf("every level delivering from record %zu\n", all_started);
  ASSERT_LT(all_started + 1000, high_end) << "a lower level got nothing while high had backlog";
  for (int level : {1, 2}) {
    double got = static_cast<double>(count_in(r.levels, level, all_started, high_end)) /
                 static_cast<double>(high_end - all_started);
    std::printf("level %d: %.3f of the records while high had backlog\n", level, got);
    EXPECT_GE(got, share * 0.8) << "level " << level << " got less than its share";
    EXPECT_LE(got, share * 1.3) << "level " << level << " ran ahead of its share";
  }
  // Then normal leads and low keeps its share.
  double low_mid = static_cast<double>(count_in(r.levels, 2, high_end, normal_end)) /
                   static_cast<double>(normal_end - high_end);
  std::printf("low: %.3f of the records while normal led\n", low_mid);
  EXPECT_GE(low_mid, share * 0.8);
  EXPECT_LE(low_mid, share * 1.3);
  const std::string low = "kafka_source_priority_share_records_total{topic=";
  double share_records = 0;
  for (auto& [k, v] : r.metrics)
    if (k.rfind(low, 0) == 0) share_records += v;
  EXPECT_GT(share_records, 0) << "share records are counted";
}

TEST_F(KafkaPriority, PriorityAndTopicsTogetherAreAConfigErrorNamingTheKey) {
  FakeHost h;
  kt::Pairs cfg = {{"bootstrap.servers", servers()}, {"group.id", "g"}, {"topics", "a"},
                   {"priority", "a"}, {"priority", "b"}};
  SourceHarness src(lib(), "kafka", cfg, &h);
  auto st = src.create_status();
  EXPECT_FALSE(src.ok());
  EXPECT_NE(st.message().find("priority"), std::string::npos) << st.message();
}

// A rewind (an aborted round) in the middle of the high phase: every partition goes on at
// the checkpointed position, whatever its level's queue had fetched ahead, and in the end
// every record has come exactly once after the rewind point.
TEST_F(KafkaPriority, ARewindMidwayContinuesEachPartitionAtItsCheckpointedPosition) {
  const std::string tag = kt::unique("prio-rw");
  const std::vector<std::string> topics = {tag + ".high", tag + ".normal", tag + ".low"};
  for (const auto& t : topics) {
    kt::create_topic(servers(), t, 2);
    kt::produce(servers(), t, 0, 3000, "v");
  }
  FakeHost h;
  kt::Pairs cfg = {{"bootstrap.servers", servers()}, {"group.id", tag + "-g"},
                   {"batch.size", "100"}, {"stop.when.idle", "3000"},
                   {"priority.min.share", "0.1"}};
  for (const auto& t : topics) cfg.emplace_back("priority", t);
  SourceHarness src(lib(), "kafka", cfg, &h);
  ASSERT_TRUE(src.ok()) << src.create_status().message();
  ASSERT_TRUE(src.open().is_ok());
  std::map<int32_t, int64_t> next;  // source partition id -> next offset expected
  size_t seen = 0;
  const int64_t end = kt::now_ms() + 50000;
  while (seen < 1500 && kt::now_ms() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    for (auto& r : src.poll(100)) {
      EXPECT_EQ(r.offset, next[r.partition]);
      next[r.partition] = r.offset + 1;
      ++seen;
    }
  }
  ASSERT_GE(seen, 1500u);
  exactly::sdk::Checkpoint cp = src.checkpoint();
  std::map<int32_t, int64_t> at_cp = next;
  for (int i = 0; i < 5; ++i) src.poll(100);  // read on past the checkpoint, then abort
  ASSERT_TRUE(src.rewind(cp).is_ok());
  next = at_cp;
  bool eoi = false;
  size_t after = 0;
  while (!eoi && kt::now_ms() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    for (auto& r : src.poll(100, &eoi)) {
      EXPECT_EQ(r.offset, next[r.partition]) << "partition id " << r.partition
                                             << ": skipped or repeated after the rewind";
      next[r.partition] = r.offset + 1;
      ++after;
    }
  }
  EXPECT_TRUE(eoi);
  EXPECT_EQ(seen + after, 9000u) << "every record once after the rewind point";
}

// A second member joins midway (eager rebalance: everything is revoked and assigned
// again): each member applies the priority pauses to its new assignment, so each hands out
// its own high records, then normal, then low, and pauses the lower levels meanwhile.
TEST_F(KafkaPriority, AfterARebalanceEachMemberKeepsThePriorityOrder) {
  const std::string tag = kt::unique("prio-rb");
  const std::vector<std::string> topics = {tag + ".high", tag + ".normal", tag + ".low"};
  for (const auto& t : topics) {
    kt::create_topic(servers(), t, 2);
    kt::produce(servers(), t, 0, 4000, "v");
  }
  kt::Pairs cfg = {{"bootstrap.servers", servers()}, {"group.id", tag + "-g"},
                   {"batch.size", "100"}, {"stop.when.idle", "3000"},
                   {"priority.min.share", "0"}};
  for (const auto& t : topics) cfg.emplace_back("priority", t);
  FakeHost ha, hb;
  SourceHarness a(lib(), "kafka", cfg, &ha);
  SourceHarness b(lib(), "kafka", cfg, &hb);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a.open().is_ok());

  struct Member {
    SourceHarness* src;
    FakeHost* host;
    size_t assignments_seen = 0;
    std::vector<int> levels;                 // after its latest assignment
    std::map<int32_t, int64_t> next;         // partition id -> next offset
    double low_paused = 0;                   // after its latest assignment
    bool eoi = false;
  };
  Member ma{&a, &ha}, mb{&b, &hb};
  auto level_of = [&](FakeHost& h, int32_t id) {
    for (auto& p : h.assigned)
      if (p.id == id)
        for (size_t i = 0; i < topics.size(); ++i)
          if (p.topic == topics[i]) return static_cast<int>(i);
    return -1;
  };
  auto step = [&](Member& m) {
    if (m.eoi) return;
    auto batch = m.src->poll(100, &m.eoi);
    if (m.host->assigned.size() != m.assignments_seen) {  // a new assignment: start over
      m.assignments_seen = m.host->assigned.size();
      m.levels.clear();
      m.next.clear();
      m.low_paused = 0;
      return;  // records of the poll that rebalanced may predate it
    }
    auto it = m.host->metrics.find("kafka_source_priority_paused{topic=" + topics[2] + "}");
    if (it != m.host->metrics.end()) m.low_paused = std::max(m.low_paused, it->second);
    for (auto& r : batch) {
      m.levels.push_back(level_of(*m.host, r.partition));
      if (m.next.count(r.partition) != 0)
        EXPECT_EQ(r.offset, m.next[r.partition]) << "skipped or repeated";
      m.next[r.partition] = r.offset + 1;
    }
  };
  // A alone until it has read some of high.
  const int64_t end = kt::now_ms() + 50000;
  while (ma.levels.size() < 1000 && kt::now_ms() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    step(ma);
  }
  ASSERT_GE(ma.levels.size(), 1000u);
  ASSERT_TRUE(b.open().is_ok());
  while (!(ma.eoi && mb.eoi) && kt::now_ms() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    step(ma);
    step(mb);
  }
  ASSERT_TRUE(ma.eoi && mb.eoi) << "both members drained within 50 s";
  for (Member* m : {&ma, &mb}) {
    const char* who = m == &ma ? "first member" : "joining member";
    EXPECT_GE(m->assignments_seen, 1u) << who;
    EXPECT_FALSE(m->levels.empty()) << who << " got records after the rebalance";
    size_t out_of_order = 0;
    for (size_t i = 1; i < m->levels.size(); ++i) out_of_order += m->levels[i] < m->levels[i - 1];
    EXPECT_EQ(out_of_order, 0u) << who << ": high, then normal, then low after the rebalance";
    EXPECT_EQ(m->low_paused, 1) << who << ": low paused in librdkafka after the rebalance";
  }
  std::printf("after the rebalance: first member %zu records, joining member %zu\n",
              ma.levels.size(), mb.levels.size());
}
