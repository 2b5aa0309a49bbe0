// The kafka source's `not.before.header` against a REAL Kafka broker (the suite's, or one
// this binary starts with tests/tools/kafka-broker.sh), through the real .so: a record
// whose not-before time is ahead holds its partition (and only its partition) until then;
// every record is handed out once and in offset order, also across a rewind and a hold
// during the wait. Times are compared with the header's own value, never with a guess.
#include "kafka_test_util.hpp"

#include <chrono>

using exactly::testing::FakeHost;
using exactly::testing::Library;
using exactly::testing::OwnedRecord;
using exactly::testing::SourceHarness;

namespace {

constexpr const char* kHeader = "exactly.not-before";

Library& lib() {
  static Library l(kt::plugin_path());
  return l;
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class KafkaNotBefore : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { broker_.start("exactly-kafka-notbefore"); }
  static void TearDownTestSuite() { broker_.stop(); }
  void SetUp() override { ASSERT_FALSE(broker_.bootstrap.empty()) << "no broker: " << broker_.error; }
  static const std::string& servers() { return broker_.bootstrap; }
  static kt::SuiteBroker broker_;
};
kt::SuiteBroker KafkaNotBefore::broker_;

kt::Out rec(int32_t partition, const std::string& v, int64_t not_before = -1) {
  kt::Out o;
  o.partition = partition;
  o.key = "k-" + v;
  o.value = v;
  if (not_before >= 0) o.headers.emplace_back(kHeader, std::to_string(not_before));
  return o;
}

// A record as handed out, with the wall time its poll returned.
struct Seen {
  int32_t number = -1;  // partition number
  int64_t offset = -1;
  std::string value;
  int64_t at_ms = 0;
};

struct Reader {
  FakeHost host;
  std::unique_ptr<SourceHarness> src;
  std::vector<Seen> seen;
  double max_waiting = 0;

  Reader(const std::string& servers, const std::string& topic, const std::string& batch) {
    src = std::make_unique<SourceHarness>(
        lib(), "kafka",
        kt::Pairs{{"bootstrap.servers", servers}, {"group.id", topic + "-g"}, {"topics", topic},
                  {"batch.size", batch}, {"not.before.header", kHeader}},
        &host);
  }
  int32_t number_of(int32_t id) const {
    for (const auto& p : host.assigned)
      if (p.id == id) return p.number;
    return -1;
  }
  // Polls until `pred` holds for what was seen (or 30 s passed).
  template <class Pred>
  bool poll_until(Pred pred, int64_t limit_ms = 30000) {
    const int64_t end = kt::now_ms() + limit_ms;
    while (!pred() && kt::now_ms() < end) {
      exactly::sdk::Status st;
      auto got = src->poll(100, nullptr, &st);
      EXPECT_TRUE(st.is_ok()) << st.message();
      const int64_t at = wall_ms();
      for (auto& r : got) seen.push_back(Seen{number_of(r.partition), r.offset, r.value, at});
      auto it = host.metrics.find("kafka_source_not_before_waiting_partitions");
      if (it != host.metrics.end()) max_waiting = std::max(max_waiting, it->second);
    }
    return pred();
  }
  bool has(int32_t number, int64_t offset) const {
    for (const auto& s : seen)
      if (s.number == number && s.offset == offset) return true;
    return false;
  }
  size_t index_of(int32_t number, int64_t offset) const {
    for (size_t i = 0; i < seen.size(); ++i)
      if (seen[i].number == number && seen[i].offset == offset) return i;
    return seen.size();
  }
  double metric(const std::string& k) const {
    auto it = host.metrics.find(k);
    return it == host.metrics.end() ? 0 : it->second;
  }
};

// Offsets of one partition in the order they were handed out.
std::vector<int64_t> offsets_of(const std::vector<Seen>& seen, int32_t number) {
  std::vector<int64_t> out;
  for (const auto& s : seen)
    if (s.number == number) out.push_back(s.offset);
  return out;
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST_F(KafkaNotBefore, APartitionWaitsForItsRecordWhileAnotherFlowsAndNothingIsLostOrReordered) {
  const std::string topic = kt::unique("notbefore");
  kt::create_topic(servers(), topic, 2);
  // Partition 0: five records due now, one due in 5 s, one whose time has passed, three
  // more; partition 1: ten records due now.
  const int64_t due = wall_ms() + 5000;
  std::vector<kt::Out> first;
  for (int i = 0; i < 5; ++i) first.push_back(rec(0, "a" + std::to_string(i)));
  first.push_back(rec(0, "a5", due));
  first.push_back(rec(0, "a6", wall_ms() - 60000));
  for (int i = 7; i < 10; ++i) first.push_back(rec(0, "a" + std::to_string(i)));
  for (int i = 0; i < 10; ++i) first.push_back(rec(1, "b" + std::to_string(i)));
  kt::produce_records(servers(), topic, first);

  Reader r(servers(), topic, "100");
  ASSERT_TRUE(r.src->ok()) << r.src->create_status().message();
  ASSERT_TRUE(r.src->open().is_ok());
  ASSERT_TRUE(r.poll_until([&] { return r.has(0, 4) && r.has(1, 9) && r.max_waiting >= 1; }))
      << "partition 0 up to its waiting record and all of partition 1";
  EXPECT_FALSE(r.has(0, 5)) << "handed out before its not-before time";
  // Partition 1 goes on while partition 0 waits.
  std::vector<kt::Out> more;
  for (int i = 10; i < 20; ++i) more.push_back(rec(1, "b" + std::to_string(i)));
  kt::produce_records(servers(), topic, more);
  ASSERT_TRUE(r.poll_until([&] { return r.has(1, 19); }));
  ASSERT_TRUE(r.poll_until([&] { return r.has(0, 9); })) << "partition 0 resumed once due";

  const size_t at5 = r.index_of(0, 5);
  ASSERT_LT(at5, r.seen.size());
  EXPECT_GE(r.seen[at5].at_ms, due) << "the record came before the time in its header";
  EXPECT_LT(r.index_of(1, 19), at5)
      << "partition 1's later records waited behind partition 0's not-before record";
  EXPECT_EQ(offsets_of(r.seen, 0), range(0, 10)) << "partition 0: each record once, in order";
  EXPECT_EQ(offsets_of(r.seen, 1), range(0, 20)) << "partition 1: each record once, in order";
  EXPECT_EQ(r.max_waiting, 1);
  r.poll_until([] { return false; }, 1500);  // a few more polls: nothing more comes
  EXPECT_EQ(r.seen.size(), 30u);
  EXPECT_EQ(r.metric("kafka_source_not_before_waiting_partitions"), 0);
  EXPECT_EQ(r.metric("kafka_source_not_before_waits_total"), 1);
}

TEST_F(KafkaNotBefore, ARewindOrAHoldDuringTheWaitReplaysTheRecordsBeforeItAndTheWaitHolds) {
  const std::string topic = kt::unique("notbefore-rw");
  kt::create_topic(servers(), topic, 1);
  const int64_t due = wall_ms() + 6000;
  std::vector<kt::Out> in;
  for (int i = 0; i < 5; ++i) in.push_back(rec(0, "c" + std::to_string(i)));
  in.push_back(rec(0, "c5", due));
  for (int i = 6; i < 8; ++i) in.push_back(rec(0, "c" + std::to_string(i)));
  kt::produce_records(servers(), topic, in);

  // Batches of two: a checkpoint after the first batch is a position before the wait.
  Reader r(servers(), topic, "2");
  ASSERT_TRUE(r.src->ok()) << r.src->create_status().message();
  ASSERT_TRUE(r.src->open().is_ok());
  ASSERT_TRUE(r.poll_until([&] { return r.has(0, 1); }));
  ASSERT_EQ(r.seen.size(), 2u);
  exactly::sdk::Checkpoint at2 = r.src->checkpoint();
  ASSERT_TRUE(r.poll_until([&] { return r.has(0, 4) && r.max_waiting >= 1; }));

  // An abort: rewound to offset 2, the records before the waiting one are due again now.
  ASSERT_TRUE(r.src->rewind(at2).is_ok());
  const size_t before_rewind = r.seen.size();
  const char* waits = "kafka_source_not_before_waits_total";
  // The rewind ended the wait: 2..4 come again, and the record is met and waited for anew
  // (a second wait) instead of being handed out.
  ASSERT_TRUE(r.poll_until([&] { return r.seen.size() >= before_rewind + 3 && r.metric(waits) >= 2; }))
      << "the rewound partition kept waiting instead of replaying what was due";
  EXPECT_FALSE(r.has(0, 5));
  // A stage holds the partition (it restarts at 3 when released).
  exactly::sdk::Partition p = r.host.assigned.back();
  p.start_offset = 3;
  ASSERT_TRUE(r.src->pause_partitions({p}, true).is_ok());
  ASSERT_TRUE(r.src->pause_partitions({p}, false).is_ok());
  const size_t before_release = r.seen.size();
  ASSERT_TRUE(r.poll_until([&] { return r.metric(waits) >= 3; })) << "the released partition waits again";
  ASSERT_TRUE(r.poll_until([&] { return r.has(0, 7); }));

  std::vector<int64_t> want = {0, 1, 2, 3, 4, 2, 3, 4};
  std::vector<int64_t> got = offsets_of(r.seen, 0);
  ASSERT_GE(got.size(), want.size());
  EXPECT_EQ(std::vector<int64_t>(got.begin(), got.begin() + static_cast<long>(want.size())), want)
      << "the rewind replays 2..4 at once (they are due), not after the wait";
  std::vector<int64_t> tail(got.begin() + static_cast<long>(before_release), got.end());
  EXPECT_EQ(tail, (std::vector<int64_t>{3, 4, 5, 6, 7})) << "after the hold: from its start, in order";
  const size_t at5 = r.index_of(0, 5);
  ASSERT_LT(at5, r.seen.size());
  EXPECT_GE(r.seen[at5].at_ms, due) << "the rewind and the hold did not end the wait early";
  EXPECT_EQ(r.metric("kafka_source_not_before_waiting_partitions"), 0);
}

// A second member joins while partition 0 waits: the rebalance revokes it mid-wait. Its
// new owner (either member) starts at the waiting record (the committed position is that
// record, not past it) and waits for the same time; nothing is handed out twice or lost,
// and the other partition keeps flowing.
TEST_F(KafkaNotBefore, APartitionRevokedWhileWaitingStartsAtItsRecordWithItsNewOwnerAndStillWaits) {
  const std::string topic = kt::unique("notbefore-rb");
  kt::create_topic(servers(), topic, 2);
  const int64_t due = wall_ms() + 15000;
  std::vector<kt::Out> in;
  for (int i = 0; i < 5; ++i) in.push_back(rec(0, "d" + std::to_string(i)));
  in.push_back(rec(0, "d5", due));
  for (int i = 6; i < 10; ++i) in.push_back(rec(0, "d" + std::to_string(i)));
  for (int i = 0; i < 10; ++i) in.push_back(rec(1, "e" + std::to_string(i)));
  kt::produce_records(servers(), topic, in);

  Reader a(servers(), topic, "100");
  ASSERT_TRUE(a.src->ok()) << a.src->create_status().message();
  ASSERT_TRUE(a.src->open().is_ok());
  ASSERT_TRUE(a.poll_until([&] { return a.has(0, 4) && a.has(1, 9) && a.max_waiting >= 1; }));
  // The round commits: partition 0's position is its waiting record.
  ASSERT_TRUE(a.src->commit(a.src->checkpoint()).is_ok());
  EXPECT_EQ(kt::committed(servers(), topic + "-g", topic, 2)[0], 5);

  Reader b(servers(), topic, "100");
  ASSERT_TRUE(b.src->ok()) << b.src->create_status().message();
  ASSERT_TRUE(b.src->open().is_ok());
  auto both_assigned = [&] {
    return !a.host.revoked.empty() && !b.host.assigned.empty();
  };
  // Both members poll (one thread, in turn) until the group has rebalanced.
  const int64_t end = kt::now_ms() + 30000;
  while (!both_assigned() && kt::now_ms() < end) {
    a.poll_until([] { return false; }, 150);
    b.poll_until([] { return false; }, 150);
  }
  ASSERT_TRUE(both_assigned()) << "no rebalance within 30 s";
  std::vector<kt::Out> more;
  for (int i = 10; i < 20; ++i) more.push_back(rec(1, "e" + std::to_string(i)));
  kt::produce_records(servers(), topic, more);
  auto done = [&] { return (a.has(0, 9) || b.has(0, 9)) && (a.has(1, 19) || b.has(1, 19)); };
  const int64_t end2 = kt::now_ms() + 40000;
  while (!done() && kt::now_ms() < end2) {
    a.poll_until([] { return false; }, 150);
    b.poll_until([] { return false; }, 150);
  }
  auto dump = [](const Reader& r) {
    std::string s;
    for (const auto& x : r.seen) s += " " + std::to_string(x.number) + ":" + std::to_string(x.offset);
    for (const auto& [k, v] : r.host.metrics) s += "\n  " + k + "=" + std::to_string(v);
    for (const auto& [l, m] : r.host.logs) s += "\n  log " + m;
    return s;
  };
  ASSERT_TRUE(done()) << "a:" << dump(a) << "\nb:" << dump(b);

  std::vector<int64_t> p0 = offsets_of(a.seen, 0), p1 = offsets_of(a.seen, 1);
  for (int64_t o : offsets_of(b.seen, 0)) p0.push_back(o);
  for (int64_t o : offsets_of(b.seen, 1)) p1.push_back(o);
  std::sort(p0.begin(), p0.end());
  std::sort(p1.begin(), p1.end());
  EXPECT_EQ(p0, range(0, 10)) << "partition 0: each record once across both members";
  EXPECT_EQ(p1, range(0, 20)) << "partition 1: each record once across both members";
  for (const Reader* r : {&a, &b}) {
    const size_t at5 = r->index_of(0, 5);
    if (at5 == r->seen.size()) continue;
    EXPECT_GE(r->seen[at5].at_ms, due) << "the new owner handed the record out before its time";
    // Within a member, a partition's records come in offset order.
    for (int32_t part : {0, 1}) {
      auto o = offsets_of(r->seen, part);
      EXPECT_TRUE(std::is_sorted(o.begin(), o.end())) << "partition " << part;
    }
  }
}
