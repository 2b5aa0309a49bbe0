// A cluster that answers but has no transaction coordinator to give (here: one broker
// told to keep __transaction_state on three, so the topic cannot be made; in a real
// cluster, the brokers leading it down, or it below min.insync.replicas). An
// exactly_once sink's init_transactions times out; its error names the coordinator, not
// "cannot reach" the cluster (QA r10: "cannot reach" while a broker of the three
// answered the same host's consumers).
#include <gtest/gtest.h>

#include "kafka_env.hpp"
#include "own_cluster.hpp"
#include "test_util.hpp"

#include <exactly/testing/harness.hpp>

using namespace exactly::test;

namespace {

const auto* const g_env = ::testing::AddGlobalTestEnvironment(
    new OwnCluster(1, "512m", "--prop transaction.state.log.replication.factor=3"));

}  // namespace

TEST(TxnCoordinator, AnInitTransactionsTimeoutAgainstAClusterThatAnswersNamesTheCoordinator) {
  using exactly::testing::Library;
  using exactly::testing::SinkHarness;
  const std::string out = unique_name("coord-out");
  kafka_tool("create-topic --topic " + out + " --partitions 1");
  Library lib(std::string(EXACTLY_PLUGIN_DIR) + "/exactly_kafka.so");
  SinkHarness sink(lib, "kafka",
                   {{"bootstrap.servers", kafka_bootstrap()}, {"topic", out},
                    {"delivery", "exactly_once"}, {"transactional.id", unique_name("coord-txn")},
                    {"open.timeout", "4000"}});
  ASSERT_TRUE(sink.ok()) << sink.create_status().message();
  auto st = sink.open();
  ASSERT_EQ(st.code(), EX_ERR_RETRIABLE) << st.message();
  EXPECT_NE(st.message().find("the transaction coordinator of " + kafka_bootstrap() +
                              " did not answer init_transactions"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("though the cluster answers"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("cannot reach"), std::string::npos) << st.message();
}
