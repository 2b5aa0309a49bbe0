// at_least_once with a changelog: a round's changelog records reach the cluster only after
// its output did. Without a transaction nothing else orders them, and a changelog meta
// saying "output up to offset N" that landed while part of that output did not made the
// partition's next owner drop the replay of it as duplicates (the fresh-clone CI lost 42
// ids across a kill in ScaleOut.AtLeastOnceLosesNoIdAcrossHosts). So until the round's
// prepare_commit has its output delivered, none of its changelog records is sent.
#include <gtest/gtest.h>

#include <exactly/testing/harness.hpp>

#include <chrono>
#include <thread>

#include "kafka_env.hpp"

using namespace exactly::test;
using exactly::testing::Library;
using exactly::testing::rec;
using exactly::testing::SinkHarness;

TEST(AtLeastOnceChangelog, ARoundsChangelogIsSentOnlyOnceItsOutputIsDelivered) {
  const std::string in = unique_name("aloc-in"), out = unique_name("aloc-out"), store = unique_name("aloc-cl");
  kafka_tool("create-topic --topic " + in + " --partitions 1");
  kafka_tool("create-topic --topic " + out + " --partitions 1");
  Library lib(std::string(EXACTLY_PLUGIN_DIR) + "/exactly_kafka.so");
  SinkHarness sink(lib, "kafka",
                   {{"bootstrap.servers", kafka_bootstrap()}, {"topic", out}, {"delivery", "at_least_once"}});
  ASSERT_TRUE(sink.ok()) << sink.create_status().message();
  ASSERT_TRUE(sink.open().is_ok());
  const exactly::sdk::Partition part{0, in + "-0", in, 0, -1};
  exactly::sdk::StateInfo info;
  auto st = sink.state_open(store, part, info);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(info.end, 0);

  // A round: its output, then (as a dedupe stage's prepare_commit does) its changelog
  // record. A second passes: a record produced then would be on the broker by now.
  exactly::sdk::Status wrote;
  auto rejected = sink.write({rec(std::string("k"), "v", 0, 0)}, &wrote);
  ASSERT_TRUE(wrote.is_ok()) << wrote.message();
  ASSERT_TRUE(rejected.empty());
  ASSERT_TRUE(sink.state_write(store, part, "meta", std::string_view("output up to offset 1")).is_ok());
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_TRUE(sink.state_open(store, part, info).is_ok());
  EXPECT_EQ(info.end, 0) << "the changelog record was sent before the round's output was delivered";

  // The sink's prepare_commit: the output, then the changelog, both delivered.
  st = sink.prepare_commit();
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_TRUE(sink.state_open(store, part, info).is_ok());
  EXPECT_EQ(info.end, 1);
  auto ends = kafka_tool("end-offsets --topic " + out);
  EXPECT_NE(ends.out.find("\"end\":1"), std::string::npos) << ends.out;

  // An aborted round's changelog records are never sent.
  ASSERT_TRUE(sink.state_write(store, part, "meta", std::string_view("output up to offset 2")).is_ok());
  EXPECT_TRUE(sink.abort().is_ok());
  st = sink.prepare_commit();
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_TRUE(sink.state_open(store, part, info).is_ok());
  EXPECT_EQ(info.end, 1);
}
