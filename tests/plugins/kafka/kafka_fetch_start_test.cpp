// The kafka source starts fetching every partition it is assigned, against a REAL broker
// (the suite's, or one started here), through the real .so. (A partition that stalls
// anyway is noticed and restarted, `fetch.stall.timeout`: kafka_mock_test.cpp, where a
// partition's fetches can be made to fail.)
//
// Why: librdkafka 2.0.2 drops a partition's pending FETCH_START when a pause or resume of
// that partition (even a no-op resume) is issued between its creation and its handling on
// librdkafka's main thread (a version barrier makes it "outdated"; upstream fixed the
// no-op resume in 2.3.1, #4636). The source used to resume every partition right after
// rd_kafka_assign(): about one fresh assignment in ten left a partition that was never
// fetched, silently (seen in the latency benchmark, docs/benchmarks.md). A pause of a
// partition that has not started (a priority level, a hold) cancels its start the same
// way, and the later resume did not restart it.
//
// The race itself is narrow: these loops did not hit it in 145 rounds against the old
// code (the exactly host did once, in round 10 of a loop like tests/tools/
// fetch-start-loop.sh, whose 40-round runs then saw it neither before nor after); they guard
// that every partition of a fresh assignment, with and without pauses at assignment,
// is fetched.
#include "kafka_test_util.hpp"

using exactly::testing::FakeHost;
using exactly::testing::Library;
using exactly::testing::SourceHarness;

namespace {

Library& lib() {
  static Library l(kt::plugin_path());
  return l;
}

class KafkaFetchStart : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { broker_.start("exactly-kafka-fetchstart"); }
  static void TearDownTestSuite() { broker_.stop(); }
  void SetUp() override { ASSERT_FALSE(broker_.bootstrap.empty()) << "no broker: " << broker_.error; }
  static const std::string& servers() { return broker_.bootstrap; }
  static kt::SuiteBroker broker_;
};
kt::SuiteBroker KafkaFetchStart::broker_;

// Records per partition number (of the harness's ids) seen until `want` arrived or the
// deadline passed.
std::map<std::string, int> read_until(SourceHarness& src, FakeHost& h, size_t want, int64_t limit_ms) {
  std::map<std::string, int> per;
  size_t got = 0;
  const int64_t end = kt::now_ms() + limit_ms;
  while (got < want && kt::now_ms() < end) {
    exactly::sdk::Status st;
    auto recs = src.poll(50, nullptr, &st);
    EXPECT_TRUE(st.is_ok()) << st.message();
    for (const auto& r : recs) {
      for (const auto& p : h.assigned)
        if (p.id == r.partition) ++per[p.topic + "-" + std::to_string(p.number)];
      ++got;
    }
  }
  return per;
}

// Fresh topics, records already there, a new group each time: every partition must
// deliver. The stall check is off, so that only the start itself is measured.
TEST_F(KafkaFetchStart, EveryAssignedPartitionIsFetchedEachTime) {
  constexpr int kRounds = 30, kParts = 4, kPerPartition = 5;
  int stalled_rounds = 0;
  std::string first_stall;
  for (int round = 0; round < kRounds; ++round) {
    const std::string topic = kt::unique("fs");
    kt::create_topic(servers(), topic, kParts);
    for (int p = 0; p < kParts; ++p) kt::produce(servers(), topic, 0, kPerPartition, "v", p);
    FakeHost h;
    SourceHarness src(lib(), "kafka",
                      kt::Pairs{{"bootstrap.servers", servers()}, {"group.id", topic + "-g"},
                                {"topics", topic}, {"fetch.stall.timeout", "0"}},
                      &h);
    ASSERT_TRUE(src.ok()) << src.create_status().message();
    ASSERT_TRUE(src.open().is_ok());
    auto per = read_until(src, h, kParts * kPerPartition, 15000);
    bool all = per.size() == kParts;
    for (const auto& [name, n] : per) all = all && n == kPerPartition;
    if (!all) {
      ++stalled_rounds;
      if (first_stall.empty()) {
        first_stall = "round " + std::to_string(round) + ":";
        for (int p = 0; p < kParts; ++p)
          first_stall += " " + std::to_string(per[topic + "-" + std::to_string(p)]);
      }
    }
  }
  EXPECT_EQ(stalled_rounds, 0) << "rounds in which a partition delivered fewer than "
                               << kPerPartition << " records in 15 s (records per partition in the "
                               << "first: " << first_stall << ")";
}

// Priority levels pause the lower level at once, on assignment, before librdkafka has
// started it; once the higher level has drained, the lower one must be fetched.
TEST_F(KafkaFetchStart, ALevelPausedAtAssignmentIsFetchedWhenItsTurnComes) {
  constexpr int kRounds = 8, kPerPartition = 20;
  int stalled_rounds = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::string tag = kt::unique("fsp");
    const std::string high = tag + ".high", low = tag + ".low";
    for (const auto& t : {high, low}) {
      kt::create_topic(servers(), t, 2);
      for (int p = 0; p < 2; ++p) kt::produce(servers(), t, 0, kPerPartition, "v", p);
    }
    FakeHost h;
    SourceHarness src(lib(), "kafka",
                      kt::Pairs{{"bootstrap.servers", servers()}, {"group.id", tag + "-g"},
                                {"priority", high}, {"priority", low},
                                {"priority.min.share", "0"}, {"fetch.stall.timeout", "0"}},
                      &h);
    ASSERT_TRUE(src.ok()) << src.create_status().message();
    ASSERT_TRUE(src.open().is_ok());
    auto per = read_until(src, h, 4 * kPerPartition, 15000);
    bool all = per.size() == 4u;
    for (const auto& [name, n] : per) all = all && n == kPerPartition;
    if (!all) ++stalled_rounds;
  }
  EXPECT_EQ(stalled_rounds, 0) << "rounds in which a partition was never fetched";
}

}  // namespace
