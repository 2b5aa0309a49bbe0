// A transaction that outlives transaction.timeout is aborted by its coordinator, which
// bumps the producer's epoch: librdkafka then reports the producer as fenced. The sink's
// error said another producer had taken over its id, and pointed at a copied state.dir
// (QA, after a broker kill stalled a round past the timeout). A host frozen with its
// transaction open (SIGSTOP, as a long GC-like pause or a stalled round) gets there the
// same way; it must name the timeout, and the output stays exact.
#include <gtest/gtest.h>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "output_checks.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

TEST(TxnTimeoutFence, ATransactionAbortedForItsAgeIsNamedNotBlamedOnAnotherProducer) {
  const std::string in = unique_name("tto-in"), out = unique_name("tto-out"), group = unique_name("tto-g");
  const fs::path dir = temp_dir("txn-timeout-fence");
  create_in_out_topics(in, out);
  const fs::path stop_file = dir / "stop-input";
  auto producer = produce_while_running(in, 400000, 2000, "0.05", 41, dir / "producer.log", stop_file);
  write_file(dir / "host.yaml",
             dedupe_host_yaml("tto", in, out, group, dir / "state") +
                 "        transaction.timeout: 1s\n");
  Host host("host", dir / "host.yaml", dir / "host.log");
  host.start();
  ASSERT_TRUE(wait_committed(group, in, 1000, std::chrono::seconds(90))) << host.log_tail();
  // Frozen with input arriving, so a round's transaction is open; the broker looks for
  // timed-out transactions every 10 s (its default). A freeze that lands between a commit
  // and the next round's first record finds no transaction open (CI once: the round after
  // it failed on the group's session instead, output exact): frozen again, up to 3 times.
  const std::string said = "longer than transaction.timeout (1.0 s): the transaction coordinator aborted it";
  bool named = false;
  for (int freeze = 0; freeze < 3 && !named; ++freeze) {
    host.signal(SIGSTOP);
    std::this_thread::sleep_for(std::chrono::seconds(16));
    host.signal(SIGCONT);
    int code = -1;
    EXPECT_FALSE(producer->exited(&code)) << "the input was complete before the host froze";
    named = wait_for([&] { return read_file(host.log()).find(said) != std::string::npos; },
                     std::chrono::seconds(30));
  }
  EXPECT_TRUE(named) << host.log_tail();
  EXPECT_EQ(read_file(host.log()).find("Another producer with transactional.id"), std::string::npos)
      << host.log_tail();
  const long long records = end_input(*producer, stop_file, dir / "producer.log", in);
  EXPECT_TRUE(wait_committed(group, in, records, std::chrono::seconds(120)))
      << "committed " << committed_total(group, in) << " of " << records << host.log_tail();
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
  wait_output_settled(out);
  expect_dedupe_exactly_once(in, out, records);
}

}  // namespace
