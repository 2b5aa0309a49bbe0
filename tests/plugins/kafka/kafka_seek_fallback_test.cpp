// The kafka source's fallback when a seek fails, through the real .so against a REAL
// broker: it re-assigns its whole assignment at explicit offsets, then pauses again what
// must stay paused. In librdkafka 2.0.2 a seek fails (__STATE) only when it races a
// partition's fetch start, a window too narrow to hit on purpose (kafka_fetch_start_test
// describes the race), so these tests make every seek fail with EXACTLY_FAULTS
// (plugins/kafka/fault_injection.hpp) and check that the records come out as they would
// after a seek: from the target offset, each once, in order.
#include "kafka_test_util.hpp"

#include <cstdlib>
#include <map>
#include <set>

using exactly::sdk::Checkpoint;
using exactly::testing::FakeHost;
using exactly::testing::Library;
using exactly::testing::OwnedRecord;
using exactly::testing::SourceHarness;

namespace {

Library& lib() {
  static Library l(kt::plugin_path());
  return l;
}

class KafkaSeekFallback : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { broker_.start("exactly-kafka-seekfallback"); }
  static void TearDownTestSuite() { broker_.stop(); }
  void SetUp() override { ASSERT_FALSE(broker_.bootstrap.empty()) << "no broker: " << broker_.error; }
  void TearDown() override { ::unsetenv("EXACTLY_FAULTS"); }
  static const std::string& servers() { return broker_.bootstrap; }
  // The stall check is off: it restarts a partition that stops fetching, and would hide a
  // fallback that leaves one paused.
  static kt::Pairs source_cfg(const std::string& group, const std::string& topic) {
    return {{"bootstrap.servers", servers()}, {"group.id", group}, {"topics", topic},
            {"batch.size", "500"}, {"fetch.stall.timeout", "0"}};
  }
  // A source with the faults of `spec` armed (every seek fails by default): the variable
  // is read when the source is created.
  static std::unique_ptr<SourceHarness> failing_source(const kt::Pairs& cfg, FakeHost& h,
                                                       const char* spec = "kafka.source.seek") {
    ::setenv("EXACTLY_FAULTS", spec, 1);
    auto src = std::make_unique<SourceHarness>(lib(), "kafka", cfg, &h);
    ::unsetenv("EXACTLY_FAULTS");
    return src;
  }
  static size_t logged(const FakeHost& h, const std::string& text) {
    size_t n = 0;
    for (const auto& [level, msg] : h.logs)
      if (msg.find(text) != std::string::npos) ++n;
    return n;
  }
  static kt::SuiteBroker broker_;
};
kt::SuiteBroker KafkaSeekFallback::broker_;

}  // namespace

// An aborted round's rewind: the seek back to the committed positions fails, the source
// re-assigns there instead. What comes out after the rewind is exactly every record from
// the committed positions on: the rewound ones again, none skipped, none twice.
TEST_F(KafkaSeekFallback, ARewindWhoseSeekFailsReplaysFromTheCommittedPositions) {
  const std::string in = kt::unique("sf-in"), group = kt::unique("sf-g");
  constexpr int kParts = 4, kPerPartition = 1500;
  kt::create_topic(servers(), in, kParts);
  for (int p = 0; p < kParts; ++p) kt::produce(servers(), in, 0, kPerPartition, "v", p);

  FakeHost h;
  auto src = failing_source(source_cfg(group, in), h);
  ASSERT_TRUE(src->ok()) << src->create_status().message();
  EXPECT_EQ(logged(h, "fault injection armed by EXACTLY_FAULTS: kafka.source.seek (every call)"), 1u);
  ASSERT_TRUE(src->open().is_ok());

  // Committed: the first 2000 records handed out.
  auto first = kt::poll_n(*src, 2000);
  ASSERT_GE(first.size(), 2000u);
  Checkpoint committed = src->checkpoint();
  ASSERT_TRUE(src->commit(committed).is_ok());
  std::map<int32_t, int64_t> next;  // by partition id: first offset not committed
  for (const auto& r : first) next[r.partition] = std::max(next[r.partition], r.offset + 1);

  // A round past it that aborts.
  auto doomed = kt::poll_n(*src, 1500);
  ASSERT_GE(doomed.size(), 1500u);
  ASSERT_TRUE(src->rewind(committed).is_ok());
  ASSERT_GE(logged(h, "seek failed (fault injected by EXACTLY_FAULTS (kafka.source.seek)); "
                      "re-assigning at the target offsets"), 1u)
      << "the rewind did not take the fallback";

  const size_t rest = static_cast<size_t>(kParts * kPerPartition) - first.size();
  auto replay = kt::poll_n(*src, rest, 60000);
  std::map<int32_t, std::vector<int64_t>> by_part;
  for (const auto& r : replay) by_part[r.partition].push_back(r.offset);
  size_t total = 0;
  for (const auto& [part, offsets] : by_part) {
    total += offsets.size();
    const int64_t from = next.count(part) ? next[part] : 0;
    ASSERT_EQ(offsets.front(), from) << "partition id " << part << " restarted elsewhere";
    for (size_t i = 0; i < offsets.size(); ++i)
      ASSERT_EQ(offsets[i], from + static_cast<int64_t>(i))
          << "partition id " << part << ": a gap or a repeat at index " << i;
    EXPECT_EQ(offsets.back(), kPerPartition - 1) << "partition id " << part << " stopped early";
  }
  EXPECT_EQ(total, rest);
  EXPECT_TRUE(src->poll(500).empty()) << "records beyond the end of the input";
  // Every rewound record came again.
  std::set<std::pair<int32_t, int64_t>> again;
  for (const auto& r : replay) again.insert({r.partition, r.offset});
  for (const auto& r : doomed) EXPECT_TRUE(again.count({r.partition, r.offset}));
}

// Two partitions held back from their assignment (a stage restoring them) and released
// one after the other: each release seeks back to where the held records were dropped,
// the seek fails and the source re-assigns both, the one still held included, which must
// stay paused while the released one is resumed (librdkafka keeps an application pause
// across a re-assign). Every record of both comes out once, in order, none of a
// partition while it is held (kt::expect_held_partitions_released_in_turn).
TEST_F(KafkaSeekFallback, HeldPartitionsReleasedInTurnThroughTheFallbackRepeatNothing) {
  const std::string in = kt::unique("sf-held"), group = kt::unique("sf-hg");
  kt::create_topic(servers(), in, 2);
  const int n = 4000;
  kt::produce(servers(), in, 0, n, "a", 0);
  kt::produce(servers(), in, 0, n, "b", 1);
  FakeHost h;
  auto src = failing_source(source_cfg(group, in), h);
  ASSERT_TRUE(src->ok()) << src->create_status().message();
  ASSERT_TRUE(src->open().is_ok());
  kt::expect_held_partitions_released_in_turn(*src, h, n);
  EXPECT_GE(logged(h, "re-assigning at the target offsets"), 1u) << "no release took the fallback";
}

// A count arms the fault for that many seeks: the first rewind takes the fallback, the
// second seeks as usual; both replay from the positions rewound to (never committed: a
// fallback that restarted at the group's offsets would start at 0).
TEST_F(KafkaSeekFallback, ACountedFaultFailsOnlyTheFirstSeeks) {
  const std::string in = kt::unique("sf-one"), group = kt::unique("sf-og");
  kt::create_topic(servers(), in, 1);
  kt::produce(servers(), in, 0, 5000, "v", 0);  // polls hand out up to 500 (batch.size)
  FakeHost h;
  auto owned = failing_source(source_cfg(group, in), h, "kafka.source.seek=1,kafka.source.seeek=2");
  SourceHarness& src = *owned;
  ASSERT_TRUE(src.ok()) << src.create_status().message();
  EXPECT_EQ(logged(h, "EXACTLY_FAULTS entry 'kafka.source.seeek=2' is not a fault of the kafka source"), 1u);
  ASSERT_TRUE(src.open().is_ok());
  auto first = kt::poll_n(src, 200);
  ASSERT_GE(first.size(), 200u);
  Checkpoint positions = src.checkpoint();  // where each aborted round rewinds to
  const int64_t from = first.back().offset + 1;
  for (int round = 0; round < 2; ++round) {
    auto doomed = kt::poll_n(src, 100);
    ASSERT_GE(doomed.size(), 100u);
    ASSERT_TRUE(src.rewind(positions).is_ok());
    auto again = kt::poll_n(src, 1);
    ASSERT_FALSE(again.empty());
    EXPECT_EQ(again.front().offset, from) << "round " << round;
    EXPECT_EQ(logged(h, "re-assigning at the target offsets"), 1u) << "round " << round;
  }
}
