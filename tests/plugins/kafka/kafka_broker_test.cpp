// The kafka plugin (real .so through the harness) against a REAL single-node Kafka 3.9
// broker started by tests/tools/kafka-broker.sh: the exactly-once copy with offsets in
// the transaction, an aborted round that read_committed readers never see, rewind and
// replay, fencing, oversize records and an eager rebalance.
#include "checkpoint_codec.hpp"
#include "kafka_test_util.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

using exactly::sdk::Checkpoint;
using exactly::sdk::Status;
using exactly::testing::FakeHost;
using exactly::testing::Library;
using exactly::testing::OwnedRecord;
using exactly::testing::SinkHarness;
using exactly::testing::SourceHarness;
namespace ek = exactly::kafka;
namespace fs = std::filesystem;

namespace {

Library& lib() {
  static Library l(kt::plugin_path());
  return l;
}

// Best effort: a test that dies on an assert must not leave its broker running.
std::string g_stop_cmd;
extern "C" void stop_broker_and_die(int sig) {
  if (!g_stop_cmd.empty()) (void)std::system(g_stop_cmd.c_str());
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

class KafkaBroker : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    broker_.start("exactly-kafka-broker");
    g_stop_cmd = broker_.stop_command();
    if (!g_stop_cmd.empty())
      for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGTERM}) std::signal(sig, stop_broker_and_die);
  }
  static void TearDownTestSuite() { broker_.stop(); }
  void SetUp() override {
    ASSERT_FALSE(broker_.bootstrap.empty()) << (broker_.error.empty() ? "no bootstrap address" : broker_.error);
  }
  static const std::string& servers() { return broker_.bootstrap; }

  kt::Pairs source_cfg(const std::string& group, const std::string& topic) {
    return {{"bootstrap.servers", servers()}, {"group.id", group}, {"topics", topic},
            {"batch.size", "1000"}};
  }
  kt::Pairs eos_cfg(const std::string& topic, const std::string& txn_id) {
    return {{"bootstrap.servers", servers()}, {"topic", topic}, {"delivery", "exactly_once"},
            {"transactional.id", txn_id}, {"transaction.timeout", "30000"}};
  }

  // An exactly-once sink that takes each record's topic from its "topic" header.
  kt::Pairs routed_cfg() {
    return {{"bootstrap.servers", servers()}, {"topic.from", "header:topic"},
            {"delivery", "exactly_once"}, {"transactional.id", kt::unique("txn")}};
  }
  static OwnedRecord routed(const std::string& topic, const std::string& value) {
    OwnedRecord r = exactly::testing::rec("k", value);
    r.headers.emplace_back("topic", topic);
    return r;
  }
  // Commits the sink's round (no source positions) and reads `n` committed records of `topic`.
  static auto commit_and_read(SinkHarness& sink, const std::string& topic, size_t n) {
    EXPECT_TRUE(sink.prepare_commit().is_ok());
    bool stored = false;
    EXPECT_TRUE(sink.commit(std::nullopt, &stored).is_ok());
    return kt::read_topic(servers(), topic, true, n);
  }

  static kt::SuiteBroker broker_;
};
kt::SuiteBroker KafkaBroker::broker_;

int64_t sum(const std::map<int32_t, int64_t>& m) {
  int64_t s = 0;
  for (auto& [p, o] : m) s += o;
  return s;
}

// One host-like round: write what was polled, then commit with the source's positions.
Status commit_round(SourceHarness& src, SinkHarness& sink, const std::vector<OwnedRecord>& batch,
                    Checkpoint* committed) {
  Status st;
  auto rejected = sink.write(batch, &st);
  EXPECT_TRUE(rejected.empty());
  if (!st.is_ok()) return st;
  Checkpoint cp = src.checkpoint();
  st = sink.prepare_commit();
  if (!st.is_ok()) return st;
  bool stored = false;
  st = sink.commit(cp, &stored);
  if (!st.is_ok()) return st;
  EXPECT_TRUE(stored);
  *committed = cp;
  return st;
}

}  // namespace

TEST_F(KafkaBroker, ExactlyOnceCopyAbortedRoundIsInvisibleAndReplays) {
  const std::string in = kt::unique("in"), out = kt::unique("out"), group = kt::unique("g");
  kt::create_topic(servers(), in, 4);
  kt::create_topic(servers(), out, 4);
  kt::produce(servers(), in, 0, 10000);

  FakeHost src_host, sink_host;
  SourceHarness src(lib(), "kafka", source_cfg(group, in), &src_host);
  SinkHarness sink(lib(), "kafka", eos_cfg(out, kt::unique("txn")), &sink_host);
  ASSERT_TRUE(src.ok()) << src.create_status().message();
  ASSERT_TRUE(sink.ok()) << sink.create_status().message();
  ASSERT_TRUE(sink.open().is_ok());
  ASSERT_TRUE(src.open().is_ok());

  // 1. Copy 10k records, one transaction per poll batch.
  Checkpoint committed;
  size_t copied = 0;
  const int64_t t0 = kt::now_ms();
  const int64_t end = t0 + 120000;
  while (copied < 10000 && kt::now_ms() < end) {
    Status st;
    auto batch = src.poll(200, nullptr, &st);
    ASSERT_TRUE(st.is_ok()) << st.message();
    if (batch.empty()) continue;
    st = commit_round(src, sink, batch, &committed);
    ASSERT_TRUE(st.is_ok()) << st.message();
    copied += batch.size();
  }
  const int64_t took = std::max<int64_t>(1, kt::now_ms() - t0);
  ASSERT_EQ(copied, 10000u);
  std::printf("[ info ] EOS copy of 10000 records: %lld ms (%.0f records/s, %g transactions)\n",
              static_cast<long long>(took), 10000.0 * 1000 / took,
              sink_host.metric("kafka_sink_transactions_committed_total"));

  auto read = kt::read_topic(servers(), out, true, 10000);
  ASSERT_EQ(read.size(), 10000u);
  std::set<std::string> values;
  for (auto& m : read) values.insert(m.value);
  EXPECT_EQ(values.size(), 10000u);
  EXPECT_TRUE(values.count("v0") && values.count("v9999"));
  // The offsets went into the group through the transaction.
  EXPECT_EQ(sum(kt::committed(servers(), group, in, 4)), 10000);

  // 2. A round that aborts: its output never becomes visible, the source rewinds.
  kt::produce(servers(), in, 10000, 10500);
  std::vector<OwnedRecord> doomed = kt::poll_n(src, 500);
  ASSERT_EQ(doomed.size(), 500u);
  ASSERT_TRUE(sink.write(doomed).empty());
  ASSERT_TRUE(sink.abort().is_ok());
  ASSERT_TRUE(src.rewind(committed).is_ok());
  EXPECT_EQ(sink_host.metric("kafka_sink_transactions_aborted_total"), 1);

  // A marker written after the abort is visible only once no transaction pins the LSO.
  kt::produce(servers(), out, 0, 1, "marker", 0);
  read = kt::read_topic(servers(), out, true, 10001);
  size_t markers = 0, data = 0;
  for (auto& m : read) (m.value.rfind("marker", 0) == 0 ? markers : data)++;
  EXPECT_EQ(markers, 1u);
  EXPECT_EQ(data, 10000u);
  EXPECT_EQ(sum(kt::committed(servers(), group, in, 4)), 10000);

  // 3. The replay delivers exactly the aborted records again, and commits.
  std::vector<OwnedRecord> replay = kt::poll_n(src, 500);
  ASSERT_EQ(replay.size(), 500u);
  auto origin = [](const OwnedRecord& r) { return std::make_pair(r.partition, r.offset); };
  std::set<std::pair<int32_t, int64_t>> a, b;
  for (auto& r : doomed) a.insert(origin(r));
  for (auto& r : replay) b.insert(origin(r));
  EXPECT_EQ(a, b);
  EXPECT_TRUE(src.poll(500).empty());
  ASSERT_TRUE(commit_round(src, sink, replay, &committed).is_ok());

  read = kt::read_topic(servers(), out, true, 10501);
  values.clear();
  data = 0;
  for (auto& m : read)
    if (m.value.rfind("marker", 0) != 0) {
      ++data;
      values.insert(m.value);
    }
  EXPECT_EQ(data, 10500u);
  EXPECT_EQ(values.size(), 10500u);
  EXPECT_EQ(sum(kt::committed(servers(), group, in, 4)), 10500);
}

TEST_F(KafkaBroker, RecordsArriveWithTheirHeadersOrNoneAsWritten) {
  const std::string in = kt::unique("hdr-in");
  kt::create_topic(servers(), in, 1);
  auto plain = kt::header_mix(700, "p");
  auto packed = kt::header_mix(700, "z");
  kt::produce_records(servers(), in, plain);
  kt::produce_records(servers(), in, packed, {{"compression.codec", "lz4"}});
  std::vector<kt::Out> all = plain;
  all.insert(all.end(), packed.begin(), packed.end());

  SourceHarness src(lib(), "kafka", source_cfg(kt::unique("hdr-g"), in));
  ASSERT_TRUE(src.ok()) << src.create_status().message();
  ASSERT_TRUE(src.open().is_ok());
  kt::expect_as_written(all, kt::poll_n(src, all.size()));
}

// The fetcher is woken when a full prefetch queue has room (kafka_test_util.hpp).
TEST_F(KafkaBroker, ABacklogThroughASmallPrefetchQueueKeepsBeingFetched) {
  const std::string in = kt::unique("wake-in");
  kt::create_topic(servers(), in, 1);
  kt::expect_backlog_keeps_being_fetched(lib(), servers(), in, 6000);
}

// A group with nothing committed starts each partition at its log start, looked up by
// the source itself before the assign (kafka_source.cpp, resolve_earliest): here 40 on
// partition 0, whose first records were deleted, and 0 on partition 1. Both are named.
TEST_F(KafkaBroker, AFreshGroupStartsAtTheLogStartTheSourceLookedUp) {
  const std::string in = kt::unique("start-in");
  kt::create_topic(servers(), in, 2);
  kt::produce(servers(), in, 0, 100, "a", 0);
  kt::produce(servers(), in, 100, 150, "b", 1);
  kt::delete_records_before(servers(), in, 0, 40);

  FakeHost host;
  SourceHarness src(lib(), "kafka", source_cfg(kt::unique("start-g"), in), &host);
  ASSERT_TRUE(src.ok()) << src.create_status().message();
  ASSERT_TRUE(src.open().is_ok());
  auto got = kt::poll_n(src, 110);
  ASSERT_EQ(got.size(), 110u);
  std::map<std::string, int64_t> first;
  for (auto& r : got) {
    const std::string part = r.value.substr(0, 1);
    if (!first.count(part)) first[part] = r.offset;
  }
  EXPECT_EQ(first["a"], 40);
  EXPECT_EQ(first["b"], 0);
  for (auto& p : host.assigned) EXPECT_EQ(p.start_offset, -1) << p.name << ": nothing was committed";
  std::string said;
  for (auto& [level, line] : host.logs)
    if (line.find("nothing committed for") != std::string::npos) said = line;
  EXPECT_NE(said.find(in + "-0 at 40"), std::string::npos) << said;
  EXPECT_NE(said.find(in + "-1 at 0"), std::string::npos) << said;
  EXPECT_TRUE(src.poll(300).empty());
}

TEST_F(KafkaBroker, RestartedSourceResumesAtOffsetsCommittedInTheTransaction) {
  const std::string in = kt::unique("in"), out = kt::unique("out"), group = kt::unique("g");
  kt::create_topic(servers(), in, 2);
  kt::create_topic(servers(), out, 2);
  kt::produce(servers(), in, 0, 300);
  Checkpoint committed;
  {
    SourceHarness src(lib(), "kafka", source_cfg(group, in));
    SinkHarness sink(lib(), "kafka", eos_cfg(out, kt::unique("txn")));
    ASSERT_TRUE(sink.open().is_ok());
    ASSERT_TRUE(src.open().is_ok());
    auto batch = kt::poll_n(src, 300);
    ASSERT_EQ(batch.size(), 300u);
    ASSERT_TRUE(commit_round(src, sink, batch, &committed).is_ok());
  }
  kt::produce(servers(), in, 300, 320);
  FakeHost host;
  SourceHarness src(lib(), "kafka", source_cfg(group, in), &host);
  ASSERT_TRUE(src.open().is_ok());
  auto rest = kt::poll_n(src, 20);
  EXPECT_EQ(rest.size(), 20u);
  ASSERT_EQ(host.assigned.size(), 2u);
  int64_t starts = 0;
  for (auto& p : host.assigned) starts += p.start_offset;
  EXPECT_EQ(starts, 300);
  std::set<std::string> values;
  for (auto& r : rest) values.insert(r.value);
  for (int i = 300; i < 320; ++i) EXPECT_TRUE(values.count("v" + std::to_string(i))) << i;
}

TEST_F(KafkaBroker, SecondInstanceWithTheSameTransactionalIdFencesTheFirst) {
  const std::string out = kt::unique("out"), txn = kt::unique("txn");
  kt::create_topic(servers(), out, 1);
  SinkHarness first(lib(), "kafka", eos_cfg(out, txn));
  ASSERT_TRUE(first.open().is_ok());
  ASSERT_TRUE(first.write({exactly::testing::rec("a", "zombie")}).empty());

  SinkHarness second(lib(), "kafka", eos_cfg(out, txn));
  ASSERT_TRUE(second.open().is_ok());  // fences `first`, aborts its open transaction

  Status st = first.prepare_commit();
  if (st.is_ok()) {
    bool stored = false;
    st = first.commit(std::nullopt, &stored);
  }
  EXPECT_EQ(st.code(), EX_ERR_FATAL) << st.message();

  ASSERT_TRUE(second.write({exactly::testing::rec("b", "live")}).empty());
  ASSERT_TRUE(second.prepare_commit().is_ok());
  bool stored = false;
  ASSERT_TRUE(second.commit(std::nullopt, &stored).is_ok());
  auto read = kt::read_topic(servers(), out, true, 1);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].value, "live");
}

TEST_F(KafkaBroker, AFencedProducerFailsTheBatchInsteadOfRejectingItsRecords) {
  // Fenced (another instance, or a survivor's fence.departed, took the transactional id):
  // librdkafka refuses every later produce with the fatal error's code (_FENCED). That is
  // the instance failing, not a bad record: records handed to the error policy would stop
  // the pipeline for good (errors.policy: stop) or send good records to dead letters.
  const std::string out = kt::unique("out"), out2 = kt::unique("out"), txn = kt::unique("txn");
  kt::create_topic(servers(), out, 1);
  kt::create_topic(servers(), out2, 1);
  kt::Pairs cfg = {{"bootstrap.servers", servers()}, {"topic.from", "header:topic"},
                   {"delivery", "exactly_once"}, {"transactional.id", txn},
                   {"transaction.timeout", "30000"}};
  auto to = [](const std::string& topic) {
    OwnedRecord r = exactly::testing::rec("k", "v");
    r.headers.emplace_back("topic", topic);
    return r;
  };
  SinkHarness first(lib(), "kafka", cfg);
  ASSERT_TRUE(first.open().is_ok()) << first.create_status().message();
  ASSERT_TRUE(first.write({to(out)}).empty());
  SinkHarness second(lib(), "kafka", eos_cfg(out, txn));
  ASSERT_TRUE(second.open().is_ok());  // fences `first`
  // Records for a partition not yet in the transaction make `first` find out.
  Status st;
  decltype(first.write({})) rejected;
  for (int i = 0; i < 100 && st.is_ok() && rejected.empty(); ++i) {
    rejected = first.write({to(out2)}, &st);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(rejected.empty()) << "a fenced producer's records were rejected as bad records";
  EXPECT_EQ(st.code(), EX_ERR_FATAL) << st.message();
}

// A record that names a topic Kafka cannot have is a bad record, not a broken sink: it
// goes to the error policy with the reason and the rest of the round commits. Before,
// a name over 512 bytes got no librdkafka handle and failed the sink (restarted into the
// same record for ever), and the others failed only at delivery (a retriable round,
// replayed for ever).
TEST_F(KafkaBroker, RecordsNamingIllegalTopicsAreRejectedAndTheRestCommits) {
  const std::string out = kt::unique("out");
  kt::create_topic(servers(), out, 1);
  SinkHarness sink(lib(), "kafka", routed_cfg());
  ASSERT_TRUE(sink.open().is_ok()) << sink.create_status().message();
  Status st;
  auto rejected = sink.write({routed(out, "first"), routed(std::string(600, 'x'), "long"),
                              routed("bad/name", "slash"), routed("..", "dots"), routed(out, "last")},
                             &st);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(rejected.size(), 3u);
  EXPECT_EQ(rejected[0].first, 1u);
  EXPECT_EQ(rejected[1].first, 2u);
  EXPECT_EQ(rejected[2].first, 3u);
  for (auto& [index, why] : rejected)
    EXPECT_NE(why.find("is not a legal Kafka topic name"), std::string::npos) << why;
  EXPECT_NE(rejected[0].second.find("... (600 bytes)"), std::string::npos) << rejected[0].second;
  auto read = commit_and_read(sink, out, 2);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].value, "first");
  EXPECT_EQ(read[1].value, "last");
}

// Kafka's internal topics and dedupe changelogs are names a record may not route to: the
// broker refused the first (a transaction that failed for good, restarted into for ever;
// at least once, a round replayed for ever that wrote the records beside it again each
// time) and a restore read the records of the second as claims (QA). Rejected per record
// with the reason; the rest of the round commits.
TEST_F(KafkaBroker, RecordsRoutedToInternalTopicsOrChangelogsAreRejectedAndTheRestCommits) {
  const std::string out = kt::unique("out");
  kt::create_topic(servers(), out, 1);
  SinkHarness sink(lib(), "kafka", routed_cfg());
  ASSERT_TRUE(sink.open().is_ok()) << sink.create_status().message();
  Status st;
  auto rejected = sink.write({routed(out, "first"), routed("__consumer_offsets", "offsets"),
                              routed("__transaction_state", "txn"), routed("exactly-p-transforms-0-dedupe-changelog", "cl"),
                              routed(out, "last")},
                             &st);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(rejected.size(), 3u);
  EXPECT_EQ(rejected[0].first, 1u);
  EXPECT_NE(rejected[0].second.find("one of Kafka's internal topics"), std::string::npos) << rejected[0].second;
  EXPECT_EQ(rejected[1].first, 2u);
  EXPECT_NE(rejected[1].second.find("one of Kafka's internal topics"), std::string::npos) << rejected[1].second;
  EXPECT_EQ(rejected[2].first, 3u);
  EXPECT_NE(rejected[2].second.find("the changelog of a stateful stage"), std::string::npos) << rejected[2].second;
  auto read = commit_and_read(sink, out, 2);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].value, "first");
  EXPECT_EQ(read[1].value, "last");
}

// A legal name of a topic the cluster does not have, on a cluster that does not create
// topics on first use (here the client's allow.auto.create.topics=false; production
// brokers often have auto.create.topics.enable=false): its records are rejected with the
// reason, the rest of the round commits, and once the topic exists (asked again after
// 10 s) its records are written. Before, such a record failed at delivery and replayed
// its round for ever.
TEST_F(KafkaBroker, RecordsNamingATopicTheClusterLacksAreRejectedUntilItExists) {
  const std::string out = kt::unique("out"), later = kt::unique("later");
  kt::create_topic(servers(), out, 1);
  kt::Pairs cfg = routed_cfg();
  cfg.emplace_back("rdkafka.allow.auto.create.topics", "false");
  SinkHarness sink(lib(), "kafka", cfg);
  ASSERT_TRUE(sink.open().is_ok()) << sink.create_status().message();
  Status st;
  auto rejected = sink.write({routed(out, "first"), routed(later, "a"), routed(out, "last"), routed(later, "b")}, &st);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(rejected.size(), 2u);
  EXPECT_EQ(rejected[0].first, 1u);
  EXPECT_EQ(rejected[1].first, 3u);
  for (auto& [index, why] : rejected)
    EXPECT_NE(why.find("names topic '" + later + "', which "), std::string::npos) << why;
  EXPECT_NE(rejected[0].second.find("does not have"), std::string::npos) << rejected[0].second;
  auto read = commit_and_read(sink, out, 2);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].value, "first");
  EXPECT_EQ(read[1].value, "last");
  // The topic appears: once the sink asks again, its records are written.
  kt::create_topic(servers(), later, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(10500));
  rejected = sink.write({routed(later, "c")}, &st);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_TRUE(rejected.empty()) << rejected[0].second;
  auto read_later = commit_and_read(sink, later, 1);
  ASSERT_EQ(read_later.size(), 1u);
  EXPECT_EQ(read_later[0].value, "c");
}

// A routed topic deleted while an at_least_once sink runs: the round that wrote to it
// fails at delivery, and its replay asks the cluster again, so that topic's records go to
// the error policy with the same reason as a topic that never existed, and the sink asks
// again after 10 s. Before, the sink kept the topic's handle: the replay's records were
// refused by librdkafka's enqueue ("Unknown topic"), until librdkafka itself happened to
// learn otherwise. (An exactly_once sink's producer fails fatally there: the host rebuilds
// it, and the new one asks the cluster anyway.)
TEST_F(KafkaBroker, ARoutedTopicDeletedWhileTheSinkRunsIsRejectedAtTheReplay) {
  const std::string out = kt::unique("out"), gone = kt::unique("gone");
  kt::create_topic(servers(), out, 1);
  kt::create_topic(servers(), gone, 1);
  const kt::Pairs cfg = {{"bootstrap.servers", servers()}, {"topic.from", "header:topic"},
                         {"rdkafka.allow.auto.create.topics", "false"}};
  SinkHarness sink(lib(), "kafka", cfg);
  ASSERT_TRUE(sink.open().is_ok()) << sink.create_status().message();
  Status st;
  auto rejected = sink.write({routed(gone, "before"), routed(out, "a")}, &st);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_TRUE(rejected.empty()) << rejected[0].second;
  ASSERT_EQ(commit_and_read(sink, gone, 1).size(), 1u);

  kt::delete_topic(servers(), gone);
  const std::vector<OwnedRecord> round = {routed(out, "b"), routed(gone, "after"), routed(out, "c")};
  rejected = sink.write(round, &st);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_TRUE(rejected.empty()) << "the sink still holds the deleted topic's handle";
  st = sink.prepare_commit();
  ASSERT_FALSE(st.is_ok()) << "a record for a deleted topic was delivered";
  EXPECT_NE(st.message().find(gone), std::string::npos) << st.message();
  sink.abort();

  // The replay: the deleted topic's record is rejected with the reason, the rest commits
  // (at least once: b and c of the failed round were delivered too). The same reason
  // whichever says first that the topic is gone: the cluster's answer, or librdkafka's
  // enqueue (it learnt it from the failed delivery while the broker's metadata may still
  // list the topic; that refusal used to carry librdkafka's own "Unknown topic" text,
  // about one run in six).
  rejected = sink.write(round, &st);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].first, 1u);
  EXPECT_NE(rejected[0].second.find("names topic '" + gone + "', which "), std::string::npos)
      << rejected[0].second;
  auto read = commit_and_read(sink, out, 5);
  ASSERT_EQ(read.size(), 5u);
  EXPECT_EQ(read[0].value, "a");
  EXPECT_EQ(read[3].value, "b");
  EXPECT_EQ(read[4].value, "c");
}

TEST_F(KafkaBroker, OversizeRecordIsRejectedAndTheRestCommits) {
  const std::string out = kt::unique("out");
  kt::create_topic(servers(), out, 1);
  kt::Pairs cfg = eos_cfg(out, kt::unique("txn"));
  cfg.emplace_back("rdkafka.message.max.bytes", "20000");
  SinkHarness sink(lib(), "kafka", cfg);
  ASSERT_TRUE(sink.ok()) << sink.create_status().message();
  ASSERT_TRUE(sink.open().is_ok());
  std::vector<OwnedRecord> in = {exactly::testing::rec("a", "small"),
                                 exactly::testing::rec("b", std::string(50000, 'x')),
                                 exactly::testing::rec("c", "small too")};
  Status st;
  auto rejected = sink.write(in, &st);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].first, 1u);
  ASSERT_TRUE(sink.prepare_commit().is_ok());
  bool stored = false;
  ASSERT_TRUE(sink.commit(std::nullopt, &stored).is_ok());
  auto read = kt::read_topic(servers(), out, true, 2);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].value, "small");
  EXPECT_EQ(read[1].value, "small too");
}

// partitioning: input into an output topic with fewer partitions than the input is a
// topology mistake, a config error naming the key and the counts: as a record error, with
// errors.policy skip, two thirds of a pipeline's ids went missing (already claimed by its
// dedupe), exit 0.
TEST_F(KafkaBroker, PartitioningInputIntoATopicWithFewerPartitionsIsAConfigError) {
  const std::string out = kt::unique("out");
  kt::create_topic(servers(), out, 2);
  kt::Pairs cfg = eos_cfg(out, kt::unique("txn"));
  cfg.emplace_back("partitioning", "input");
  SinkHarness sink(lib(), "kafka", cfg);
  ASSERT_TRUE(sink.ok()) << sink.create_status().message();
  ASSERT_TRUE(sink.open().is_ok());
  ASSERT_TRUE(sink.assign({exactly::sdk::Partition{0, "in-1", "in", 1, -1},
                           exactly::sdk::Partition{1, "in-5", "in", 5, -1}})
                  .is_ok());
  std::vector<OwnedRecord> in = {exactly::testing::rec("a", "1", 0, 0), exactly::testing::rec("b", "2", 1, 0)};
  Status st;
  auto rejected = sink.write(in, &st);
  EXPECT_TRUE(rejected.empty());
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_EQ(st.key(), "partitioning") << st.message();
  EXPECT_NE(st.message().find("input partition 5 to partition 5 of " + out + ", which has 2 partition(s)"),
            std::string::npos) << st.message();
}

// A transaction.timeout the brokers refuse (over their transaction.max.timeout.ms) is the
// configuration's, not a fault that passes: it was restarted for ever.
TEST_F(KafkaBroker, ATransactionTimeoutTheBrokersRefuseIsAConfigError) {
  const std::string out = kt::unique("out");
  kt::create_topic(servers(), out, 1);
  kt::Pairs cfg = {{"bootstrap.servers", servers()}, {"topic", out}, {"delivery", "exactly_once"},
                   {"transactional.id", kt::unique("txn")}, {"transaction.timeout", "1800000"}};
  SinkHarness sink(lib(), "kafka", cfg);
  ASSERT_TRUE(sink.ok()) << sink.create_status().message();
  Status st = sink.open();
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_EQ(st.key(), "transaction.timeout") << st.message();
  EXPECT_NE(st.message().find("transaction.max.timeout.ms"), std::string::npos) << st.message();
}

TEST_F(KafkaBroker, EagerRebalanceSplitsPartitionsBetweenTwoSources) {
  const std::string in = kt::unique("in"), group = kt::unique("g");
  kt::create_topic(servers(), in, 4);
  kt::produce(servers(), in, 0, 400);
  FakeHost ha, hb;
  SourceHarness a(lib(), "kafka", source_cfg(group, in), &ha);
  ASSERT_TRUE(a.open().is_ok());
  auto first = kt::poll_n(a, 400);
  ASSERT_EQ(first.size(), 400u);
  ASSERT_EQ(ha.assigned.size(), 4u);

  SourceHarness b(lib(), "kafka", source_cfg(group, in), &hb);
  ASSERT_TRUE(b.open().is_ok());
  const int64_t end = kt::now_ms() + 60000;
  while ((hb.assigned.empty() || ha.assigned.size() <= 4) && kt::now_ms() < end) {
    a.poll(100);
    b.poll(100);
  }
  ASSERT_FALSE(hb.assigned.empty());
  // Eager: `a` gave everything back before the new assignment.
  EXPECT_EQ(ha.revoked.size(), 4u);
  std::set<std::string> names;
  for (size_t i = 4; i < ha.assigned.size(); ++i) names.insert(ha.assigned[i].name);
  for (auto& p : hb.assigned) EXPECT_TRUE(names.insert(p.name).second) << p.name << " twice";
  EXPECT_EQ(names.size(), 4u);
}

// Correctness of a larger copy; the rate is printed for the report, never asserted.
TEST_F(KafkaBroker, LargerExactlyOnceCopyKeepsEveryRecordOnce) {
  const int n = 200000;
  const std::string in = kt::unique("in"), out = kt::unique("out"), group = kt::unique("g");
  kt::create_topic(servers(), in, 4);
  kt::create_topic(servers(), out, 4);
  kt::produce(servers(), in, 0, n, std::string(90, 'p'));
  FakeHost sink_host;
  SourceHarness src(lib(), "kafka",
                    {{"bootstrap.servers", servers()}, {"group.id", group}, {"topics", in}},
                    nullptr);
  SinkHarness sink(lib(), "kafka", eos_cfg(out, kt::unique("txn")), &sink_host);
  ASSERT_TRUE(sink.open().is_ok());
  ASSERT_TRUE(src.open().is_ok());
  Checkpoint committed;
  size_t copied = 0;
  int64_t t0 = 0;
  const int64_t end = kt::now_ms() + 300000;
  while (copied < static_cast<size_t>(n) && kt::now_ms() < end) {
    Status st;
    auto batch = src.poll(200, nullptr, &st);
    ASSERT_TRUE(st.is_ok()) << st.message();
    if (batch.empty()) continue;
    if (t0 == 0) t0 = kt::now_ms();
    st = commit_round(src, sink, batch, &committed);
    ASSERT_TRUE(st.is_ok()) << st.message();
    copied += batch.size();
  }
  const int64_t took = std::max<int64_t>(1, kt::now_ms() - t0);
  ASSERT_EQ(copied, static_cast<size_t>(n));
  std::printf("[ info ] EOS copy of %d records after the first batch: %lld ms (%.0f records/s, "
              "%g transactions)\n",
              n, static_cast<long long>(took), n * 1000.0 / took,
              sink_host.metric("kafka_sink_transactions_committed_total"));
  auto read = kt::read_topic(servers(), out, true, n);
  ASSERT_EQ(read.size(), static_cast<size_t>(n));
  std::set<std::string> keys;
  for (auto& m : read) keys.insert(*m.key);
  EXPECT_EQ(keys.size(), static_cast<size_t>(n));
  EXPECT_EQ(sum(kt::committed(servers(), group, in, 4)), n);
}

// ABI 1.2 pause_partitions, as the host drives it for a stage holding a partition back:
// the paused partition yields nothing (and is not "idle"), the other flows; resumed, it
// continues from the start offset it was given, every record once and in order.
TEST_F(KafkaBroker, APausedPartitionWaitsThenContinuesFromItsStart) {
  const std::string in = kt::unique("in"), group = kt::unique("g");
  kt::create_topic(servers(), in, 2);
  kt::produce(servers(), in, 0, 200, "a", 0);
  kt::produce(servers(), in, 0, 200, "b", 1);
  FakeHost h;
  kt::Pairs cfg = source_cfg(group, in);
  cfg.emplace_back("stop.when.idle", "3000");
  SourceHarness src(lib(), "kafka", cfg, &h);
  ASSERT_TRUE(src.open().is_ok());
  std::map<int32_t, int32_t> number_of;  // source id -> partition number
  std::vector<OwnedRecord> early;
  const int64_t join_end = kt::now_ms() + 60000;
  while (h.assigned.size() < 2 && kt::now_ms() < join_end)
    for (auto& r : src.poll(100)) early.push_back(std::move(r));
  ASSERT_EQ(h.assigned.size(), 2u);
  for (auto& p : h.assigned) number_of[p.id] = p.number;
  exactly::sdk::Partition p0 = h.assigned[0].number == 0 ? h.assigned[0] : h.assigned[1];
  ASSERT_TRUE(src.pause_partitions({}, true).is_ok()) << "the host's probe";
  ASSERT_TRUE(src.pause_partitions({p0}, true).is_ok());

  // Records of partition 0 polled before the pause are dropped by the host; partition 1's count.
  size_t seen1 = 0;
  for (auto& r : early) seen1 += number_of[r.partition] == 1;
  bool eoi = false;
  const int64_t held_until = kt::now_ms() + 7000;  // over twice stop.when.idle
  while (kt::now_ms() < held_until && !eoi) {
    for (auto& r : src.poll(100, &eoi)) {
      EXPECT_EQ(number_of[r.partition], 1) << "a record of the paused partition at " << r.offset;
      seen1 += number_of[r.partition] == 1;
    }
  }
  EXPECT_FALSE(eoi) << "a held partition is not idle input";
  EXPECT_EQ(seen1, 200u);

  ASSERT_TRUE(src.pause_partitions({p0}, false).is_ok());
  std::vector<int64_t> offsets0;
  const int64_t end = kt::now_ms() + 30000;
  while (!eoi && kt::now_ms() < end)
    for (auto& r : src.poll(100, &eoi))
      if (number_of[r.partition] == 0) offsets0.push_back(r.offset);
  ASSERT_EQ(offsets0.size(), 200u);
  for (int64_t i = 0; i < 200; ++i) EXPECT_EQ(offsets0[static_cast<size_t>(i)], i);
  EXPECT_TRUE(eoi) << "idle once both partitions are drained";
}

// A host's last committed positions can name a partition it owned in an earlier
// assignment. When the partition comes back after another member moved it on, an abort
// of the first round must rewind it to where it now starts, not to the old position: that
// would replay (and, with dedupe's owner rule, emit again) everything the other member
// committed in between. This is how a scale-out run once emitted 1,862 ids twice.
TEST_F(KafkaBroker, ARewindNeverTakesAPartitionBackBeforeItsNewStart) {
  const std::string in = kt::unique("in"), group = kt::unique("g");
  kt::create_topic(servers(), in, 1);
  kt::produce(servers(), in, 0, 300);
  // The range assignor gives the partition to the member whose id sorts first; the broker
  // makes member ids from the client.id.
  auto cfg = [&](const std::string& client) {
    kt::Pairs c = source_cfg(group, in);
    for (auto& kv : c)
      if (kv.first == "batch.size") kv.second = "50";
    c.emplace_back("rdkafka.client.id", client);
    return c;
  };
  FakeHost ha;
  SourceHarness a(lib(), "kafka", cfg("zz-late"), &ha);
  ASSERT_TRUE(a.open().is_ok());
  auto first = kt::poll_n(a, 100);
  ASSERT_GE(first.size(), 100u);
  Checkpoint stale = a.checkpoint();  // a's last commit while it owns the partition
  ASSERT_TRUE(a.commit(stale).is_ok());
  const int64_t stale_at = first.back().offset + 1;

  int64_t b_end = -1;
  {
    FakeHost hb;
    SourceHarness b(lib(), "kafka", cfg("aa-early"), &hb);
    ASSERT_TRUE(b.open().is_ok());
    std::vector<OwnedRecord> got;
    const int64_t end = kt::now_ms() + 60000;
    while (got.size() < 100 && kt::now_ms() < end) {
      a.poll(100);
      for (auto& r : b.poll(100)) got.push_back(std::move(r));
    }
    ASSERT_GE(got.size(), 100u) << "the partition did not move to the member that sorts first";
    ASSERT_FALSE(ha.revoked.empty());
    b_end = got.back().offset + 1;
    ASSERT_GT(b_end, stale_at);
    ASSERT_TRUE(b.commit(b.checkpoint()).is_ok());
  }  // b leaves the group

  const size_t before = ha.assigned.size();
  std::vector<OwnedRecord> back;
  const int64_t end = kt::now_ms() + 60000;
  while (ha.assigned.size() == before && kt::now_ms() < end) {
    for (auto& r : a.poll(100)) back.push_back(std::move(r));
  }
  ASSERT_GT(ha.assigned.size(), before) << "the partition never came back";
  EXPECT_EQ(ha.assigned.back().start_offset, b_end);
  // The first round after the return aborts: rewind to the last positions a committed.
  ASSERT_TRUE(a.rewind(stale).is_ok());
  back.clear();
  const int64_t end2 = kt::now_ms() + 30000;
  while (back.empty() && kt::now_ms() < end2)
    for (auto& r : a.poll(100)) back.push_back(std::move(r));
  ASSERT_FALSE(back.empty());
  EXPECT_EQ(back.front().offset, b_end) << "rewound to " << back.front().offset
                                        << ", before the start of this assignment (" << b_end
                                        << "): records the other member committed replay";
}

// The source's side of holds with a backlog (kt::expect_held_partitions_released_in_turn;
// the same through the seek's fallback: kafka_seek_fallback_test.cpp).
TEST_F(KafkaBroker, TwoHeldPartitionsReleasedInTurnRepeatNothing) {
  const std::string in = kt::unique("in"), group = kt::unique("g");
  kt::create_topic(servers(), in, 2);
  const int n = 6000;
  kt::produce(servers(), in, 0, n, "a", 0);
  kt::produce(servers(), in, 0, n, "b", 1);
  FakeHost h;
  SourceHarness src(lib(), "kafka", source_cfg(group, in), &h);
  ASSERT_TRUE(src.open().is_ok());
  kt::expect_held_partitions_released_in_turn(src, h, n);
}
