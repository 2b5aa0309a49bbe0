#include <gtest/gtest.h>

#include <exactly/plugin_abi.h>

#include <fstream>
#include <string>

#include "error_text.hpp"
#include "log_level.hpp"
#include "process_age.hpp"
#include "repeat_filter.hpp"

using exactly::kafka::fit_error;
using exactly::kafka::with_reason;

namespace {

const std::string kHint =
    ". Another producer with transactional.id exactly-cloned-33b18d1725ff0744 has taken over "
    "(if this repeats, another live host uses a copy of this state.dir: each host needs its "
    "own; on the host with the copy, stop exactly and delete the id file, here "
    "/var/lib/exactly/kafka-sink/cloned.instance-id, so that it takes a new id)";

// What a fenced send_offsets_to_transaction said in a CI run: its partitions listed, and
// librdkafka's fatal reason the same text again; the hint after them was cut off.
std::string fenced_text() {
  std::string one = "_FENCED: Failed to commit offsets to transaction on broker 127.0.0.1:19092/1: ";
  for (int p = 0; p < 3; ++p)
    one += "csd-in-30829-0-36799[" + std::to_string(p) +
           "](Broker: Producer attempted an operation with an old epoch), ";
  one += "... (after 5ms)";
  return one;
}

}  // namespace

TEST(KafkaErrorText, ALongFencedErrorKeepsItsWholeHintWithinTheAbiLimit) {
  const std::string what = "commit: send_offsets_to_transaction: " + fenced_text() + " (fatal)";
  const std::string msg =
      fit_error("kafka sink: " + what + " (" + fenced_text() + ")", kHint, EX_ERROR_MESSAGE_MAX);
  EXPECT_LE(msg.size() + 1, static_cast<size_t>(EX_ERROR_MESSAGE_MAX));
  ASSERT_GE(msg.size(), kHint.size());
  EXPECT_EQ(msg.substr(msg.size() - kHint.size()), kHint);
  EXPECT_EQ(msg.rfind("kafka sink: commit: send_offsets_to_transaction: _FENCED", 0), 0u) << msg;
  EXPECT_NE(msg.find("..." + kHint), std::string::npos) << msg;
}

TEST(KafkaErrorText, AMessageThatFitsIsLeftAsItIs) {
  EXPECT_EQ(fit_error("kafka sink: commit: timed out", kHint, EX_ERROR_MESSAGE_MAX),
            "kafka sink: commit: timed out" + kHint);
  EXPECT_EQ(fit_error("abc", "def", 7), "abcdef");
  EXPECT_EQ(fit_error("abcdefghij", "XY", 8), "ab...XY");
}

TEST(KafkaErrorText, ATailLongerThanTheRoomIsCutAtItsEnd) {
  EXPECT_EQ(fit_error("head", "0123456789", 6), "01234");
  EXPECT_EQ(fit_error("head", "tail", 0), "");
}

TEST(KafkaErrorText, AReasonAlreadyInTheErrorIsNotRepeated) {
  EXPECT_EQ(with_reason("commit: " + fenced_text(), fenced_text()), "commit: " + fenced_text());
  EXPECT_EQ(with_reason("commit: timed out", "broker down"), "commit: timed out (broker down)");
  EXPECT_EQ(with_reason("commit: timed out", ""), "commit: timed out");
}

// A host restarted before the group saw its previous run leave is fenced by the other
// hosts' departed-member fencing (the previous run had its id). That passes once or
// twice; the text must say so first, and keep the copied-state.dir advice for repeats.
TEST(KafkaErrorText, AFenceSoonAfterTheStartNamesTheRestartBeforeACopiedStateDir) {
  using exactly::kafka::fenced_hint;
  const std::string id = "exactly-orders-33b18d1725ff0744";
  const std::string file = "/var/lib/exactly/kafka-sink/orders.instance-id";
  const std::string young = fenced_hint(id, file, 7.9);
  EXPECT_NE(young.find("This host started 7 s ago"), std::string::npos) << young;
  EXPECT_NE(young.find("previous run"), std::string::npos) << young;
  const auto restart = young.find("previous run");
  const auto copy = young.find("another live host uses a copy of this state.dir");
  ASSERT_NE(copy, std::string::npos) << young;
  EXPECT_LT(restart, copy) << young;
  EXPECT_NE(young.find("delete the id file, here " + file), std::string::npos) << young;
  EXPECT_LT(young.size() + 1, static_cast<size_t>(EX_ERROR_MESSAGE_MAX) / 2) << young;

  for (double age : {600.0, -1.0}) {  // long running, or the age unknown
    const std::string old = fenced_hint(id, file, age);
    EXPECT_EQ(old.find("started"), std::string::npos) << old;
    EXPECT_EQ(old, ". Another producer with transactional.id " + id +
                       " has taken over (if this repeats, another live host uses a copy of this "
                       "state.dir: each host needs its own; on the host with the copy, stop "
                       "exactly and delete the id file, here " + file + ", so that it takes a new id)");
  }
  const std::string configured = fenced_hint("my-own-id", "", 5);
  EXPECT_NE(configured.find("the transactional.id set for this sink is in use elsewhere"), std::string::npos)
      << configured;
}

TEST(KafkaErrorText, TheProcessAgeIsReadFromProc) {
  // Never negative, never older than the machine's uptime (a misread field would be).
  const double age = exactly::kafka::process_age_seconds();
  ASSERT_GE(age, 0.0);
  std::ifstream up("/proc/uptime");
  double uptime = 0;
  ASSERT_TRUE(up >> uptime);
  EXPECT_LE(age, uptime);
}

// A transaction that outlived transaction.timeout (a broker outage stalled the round) is
// aborted by its coordinator with the producer's epoch bumped: librdkafka reports it as a
// fence, and the text blamed another producer (QA).
TEST(KafkaErrorText, AFenceAfterTheTransactionTimedOutNamesTheTimeoutNotAnotherProducer) {
  const std::string h = exactly::kafka::timed_out_transaction_hint(21400, 10000);
  EXPECT_NE(h.find("open for 21.4 s, longer than transaction.timeout (10.0 s)"), std::string::npos) << h;
  EXPECT_NE(h.find("coordinator aborted it"), std::string::npos) << h;
  // A host paused past the timeout (SIGSTOP, a frozen VM) is one of the causes named (QA:
  // only an outage or a stalled round were).
  EXPECT_NE(h.find("this host paused"), std::string::npos) << h;
  EXPECT_EQ(h.find("Another producer"), std::string::npos) << h;
  EXPECT_EQ(h.find("state.dir"), std::string::npos) << h;
}

// librdkafka's lines repeated while a broker is away (QA: 1,826 a minute): one a window,
// the count with the next one.
TEST(KafkaLogRepeats, ALineRepeatedWithinTheWindowIsCountedAndTheCountGoesWithTheNext) {
  exactly::kafka::RepeatFilter f(5000);
  uint64_t held = 99;
  EXPECT_TRUE(f.pass("GETPID: coordinator not available", 1000, held));
  EXPECT_EQ(held, 0u);
  for (int i = 1; i <= 30; ++i) EXPECT_FALSE(f.pass("GETPID: coordinator not available", 1000 + i * 33, held));
  EXPECT_TRUE(f.pass("another line", 2000, held));  // others are not held back by it
  EXPECT_EQ(held, 0u);
  EXPECT_FALSE(f.pass("GETPID: coordinator not available", 5999, held));
  EXPECT_TRUE(f.pass("GETPID: coordinator not available", 6000, held));
  EXPECT_EQ(held, 31u);
  EXPECT_FALSE(f.pass("GETPID: coordinator not available", 6001, held));
  EXPECT_TRUE(f.pass("GETPID: coordinator not available", 20000, held));
  EXPECT_EQ(held, 1u);
}

// A restart after a kill -9 waits while the coordinator aborts the dead producer's
// transaction; librdkafka warns at every retry of it, which the sink waits through anyway
// (bounded by open.timeout, which reports it): said at info, not as a warning (QA). Other
// warnings, and the same facility's other lines, keep their level.
TEST(LibrdkafkaLogLevel, ExpectedTransactionalPidRetriesAreInfo) {
  using exactly::kafka::librdkafka_line_level;
  EXPECT_EQ(librdkafka_line_level(4, "GETPID",
                                  "[thrd:main]: Failed to acquire transactional PID from broker TxnCoordinator/1: Broker: "
                                  "Producer attempted to update a transaction while another concurrent "
                                  "operation on the same transaction was ongoing: retrying"),
            EX_LOG_INFO);
  EXPECT_EQ(librdkafka_line_level(4, "GETPID",
                                  "[thrd:main]: Failed to acquire transactional PID from broker TxnCoordinator/1: Broker: "
                                  "Coordinator load in progress: retrying"),
            EX_LOG_INFO);
  EXPECT_EQ(librdkafka_line_level(4, "GETPID",
                                  "[thrd:main]: Failed to acquire transactional PID from broker TxnCoordinator/1: Broker: "
                                  "Transactional Id authorization failed"),
            EX_LOG_WARN);
  EXPECT_EQ(librdkafka_line_level(4, "FAIL", "127.0.0.1:9092/1: Connect to ipv4#127.0.0.1:9092 failed: retrying"),
            EX_LOG_WARN);
  EXPECT_EQ(librdkafka_line_level(3, "GETPID", "Coordinator load in progress: retrying"), EX_LOG_ERROR);
  EXPECT_EQ(librdkafka_line_level(6, "GETPID", "x"), EX_LOG_INFO);
  EXPECT_EQ(librdkafka_line_level(7, "GETPID", "x"), EX_LOG_DEBUG);
}

// A broker down or gone is a warning (QA r10: ERROR lines at every broker restart of a
// 3-node cluster); a refused certificate or login, and other failures, stay errors.
TEST(LibrdkafkaLogLevel, ABrokerConnectionFailingIsAWarningAndALoginFailureAnError) {
  using exactly::kafka::librdkafka_line_level;
  EXPECT_EQ(librdkafka_line_level(3, "FAIL",
                                  "[thrd:127.0.0.1:29092/bootstrap]: 127.0.0.1:29092/1: Connect to "
                                  "ipv4#127.0.0.1:29092 failed: Connection refused (after 0ms in state CONNECT)"),
            EX_LOG_WARN);
  EXPECT_EQ(librdkafka_line_level(3, "FAIL", "[thrd:TxnCoordinator]: TxnCoordinator: 127.0.0.1:29093: 1 request(s) "
                                             "timed out: disconnect (after 10032ms in state UP)"),
            EX_LOG_WARN);
  EXPECT_EQ(librdkafka_line_level(3, "FAIL", "127.0.0.1:9093/bootstrap: SSL handshake failed: certificate verify failed"),
            EX_LOG_ERROR);
  EXPECT_EQ(librdkafka_line_level(3, "FAIL", "127.0.0.1:9093/bootstrap: SASL authentication error: Authentication "
                                             "failed during authentication due to invalid credentials"),
            EX_LOG_ERROR);
  EXPECT_EQ(librdkafka_line_level(3, "ADDOFFSETS", "Failed to add offsets to transaction: Local: Timed out"),
            EX_LOG_ERROR);
}
