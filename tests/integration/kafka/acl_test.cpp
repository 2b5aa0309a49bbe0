// A topic the sink's producer may not write (a Kafka ACL), against a SASL_SSL broker of
// the test's own with an authorizer (StandardAuthorizer; no ACL on a resource lets
// everyone in, so only the test's own DENY rules bite). Routed there (topic.from), an
// exactly_once transaction could not add the topic's partitions and was aborted and
// replayed for ever; at_least_once sent the round's good records again at every replay.
// Now one round fails, the sink names the topic (librdkafka says which only in its log),
// and its records go to the error policy. The sink's own topic is a configuration
// error, naming the ACL to add; one the client may not even describe is said to be
// hidden from it, not missing. So are an input topic the source may not read, a group it
// may not use, and a transactional id the sink may not use.
//
// One test, one broker: ctest runs every test in its own process, and the JVM start is
// most of the cost.
#include <gtest/gtest.h>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "secure_broker.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

struct HostRun {
  int code = -1;
  std::string log;
};

// kafka -> kafka with a dead-letter topic; `sink_topic` is the sink's `topic: ...` or
// `topic.from: ...` line.
HostRun run_pipeline(const std::string& delivery, const std::string& in, const std::string& sink_topic,
                     const std::string& dlq, const std::string& group = unique_name("acl-g"),
                     const std::string& name = "acl") {
  auto& b = secure_broker();
  const fs::path dir = temp_dir("acl-run");
  const std::string security =
      "{ security.protocol: SASL_SSL, sasl.mechanism: SCRAM-SHA-512, sasl.username: exactly, "
      "sasl.password: \"" + b.password + "\", ssl.ca.location: " + b.ca().string() + " }";
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: " + name + "\n"
             "    delivery: " + delivery + "\n"
             "    commit: { interval: 300ms }\n"
             "    restart: { backoff.initial: 200ms, backoff.max: 2s }\n"
             "    errors:\n      policy: dead-letter\n      dead-letter:\n        plugin: kafka\n"
             "        config: { bootstrap.servers: \"" + b.bootstrap + "\", topic: " + dlq + ", state.dir: " +
             (dir / "dlq").string() + ", rdkafka: " + security + " }\n"
             "    source:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: \"" + b.bootstrap + "\"\n        group.id: " + group + "\n"
             "        topics: [" + in + "]\n        stop.when.idle: 4s\n"
             "        rdkafka: " + security + "\n"
             "    sink:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: \"" + b.bootstrap + "\"\n        " + sink_topic + "\n"
             "        state.dir: " + (dir / "sink").string() + "\n        rdkafka: " + security + "\n");
  auto r = run("timeout 120 " + exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  return HostRun{r.exit_code, r.out + r.err};
}

// The run ended as a config error (exit 1) whose text holds `needle`.
void expect_failed_with(const HostRun& r, const std::string& needle) {
  EXPECT_EQ(r.code, 1) << tail_of(r.log, 6000);
  EXPECT_NE(r.log.find(needle), std::string::npos) << tail_of(r.log, 6000);
}

long long committed(const std::string& topic) {
  return std::atoll(secure_tool("count --topic " + topic + " --read-committed").out.c_str());
}

}  // namespace

TEST(KafkaAcl, ARoutedTopicThatMayNotBeWrittenIsItsRecordsErrorAndTheSinksOwnAConfigError) {
  secure_broker("--prop authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer "
                "--prop 'super.users=User:admin;User:ANONYMOUS' --prop allow.everyone.if.no.acl.found=true");
  const std::string in = unique_name("acl-in"), out = unique_name("acl-out"), dlq = unique_name("acl-dlq"),
                    denied = unique_name("acl-denied"), hidden = unique_name("acl-hidden");
  for (const auto& t : {in, out, denied, hidden}) secure_tool("create-topic --topic " + t + " --partitions 2");
  secure_tool("create-topic --topic " + dlq + " --partitions 1");
  // `denied`: visible (DESCRIBE) but not writable; `hidden`: any ACL on a topic ends the
  // everyone-allowed default for it, so a DENY WRITE alone leaves no DESCRIBE either.
  secure_tool("add-acl --topic " + denied + " --principal User:exactly --operation DESCRIBE --permission ALLOW");
  secure_tool("add-acl --topic " + denied + " --principal User:exactly --operation WRITE --permission DENY");
  secure_tool("add-acl --topic " + hidden + " --principal User:exactly --operation WRITE --permission DENY");
  secure_tool("produce --topic " + in + " --count 3000 --partitions 2 --keyed --seed 71 --header dest=" + out);
  secure_tool("produce --topic " + in + " --count 20 --partitions 2 --keyed --seed 72 --header dest=" + denied);
  secure_tool("produce --topic " + in + " --count 3000 --partitions 2 --keyed --seed 73 --header dest=" + out);

  // exactly_once: one round fails, its replay dead-letters the 20, every other record once.
  HostRun eos = run_pipeline("exactly_once", in, "topic.from: header:dest", dlq);
  EXPECT_EQ(eos.code, 0) << tail_of(eos.log, 6000);
  EXPECT_NE(eos.log.find("does not let this producer write topic '" + denied + "'"), std::string::npos)
      << tail_of(eos.log, 6000);
  EXPECT_GE(count_of(eos.log, "aborting round"), 1) << tail_of(eos.log, 6000);
  EXPECT_LE(count_of(eos.log, "aborting round"), 2) << tail_of(eos.log, 6000);
  EXPECT_EQ(committed(out), 6000);
  EXPECT_EQ(committed(dlq), 20);

  // at_least_once: the failed round's good records may come twice, not once per replay.
  HostRun alo = run_pipeline("at_least_once", in, "topic.from: header:dest", dlq);
  EXPECT_EQ(alo.code, 0) << tail_of(alo.log, 6000);
  EXPECT_LE(count_of(alo.log, "aborting round"), 2) << tail_of(alo.log, 6000);
  EXPECT_GE(committed(out), 12000);
  EXPECT_LE(committed(out), 18000);
  EXPECT_EQ(committed(dlq), 40);
  const long long written = committed(out);

  // The sink's own topic: the pipeline fails naming the topic and the ACL to add.
  HostRun fixed = run_pipeline("exactly_once", in, "topic: " + denied, dlq);
  expect_failed_with(fixed, "key 'topic': kafka sink: " + secure_broker().bootstrap +
                                " does not let this producer write topic " + denied);
  EXPECT_NE(fixed.log.find("--allow-principal User:exactly --operation Write"), std::string::npos)
      << tail_of(fixed.log, 6000);
  EXPECT_EQ(committed(dlq), 40) << "the sink's own topic is no record's error";

  // One the client may not describe was reported as missing.
  expect_failed_with(run_pipeline("exactly_once", in, "topic: " + hidden, dlq),
                     "topic " + hidden + " on " + secure_broker().bootstrap + " is not visible to this client");

  // The source: an input topic it may not read, a group it may not use; the sink: a
  // transactional id it may not use. Each a config error naming the ACL (they warned
  // per fetch, or restarted for ever; with stop.when.idle the run ended "idle", exit 0,
  // the input unread).
  const std::string unreadable = unique_name("acl-noread"), group = unique_name("acl-nogroup");
  secure_tool("create-topic --topic " + unreadable + " --partitions 2");
  secure_tool("produce --topic " + unreadable + " --count 100 --partitions 2 --keyed --seed 74");
  secure_tool("add-acl --topic " + unreadable + " --principal User:exactly --operation DESCRIBE --permission ALLOW");
  secure_tool("add-acl --topic " + unreadable + " --principal User:exactly --operation READ --permission DENY");
  expect_failed_with(run_pipeline("exactly_once", unreadable, "topic: " + out, dlq),
                     "key 'topics': kafka source: " + secure_broker().bootstrap +
                         " does not let this consumer read topic " + unreadable);

  secure_tool("add-acl --group " + group + " --principal User:exactly --operation READ --permission DENY");
  expect_failed_with(run_pipeline("exactly_once", in, "topic: " + out, dlq, group),
                     "key 'group.id': kafka source: " + secure_broker().bootstrap +
                         " does not let this consumer use group " + group);

  secure_tool("add-acl --transactional-id-prefix exactly-acltx- --principal User:exactly --operation WRITE "
              "--permission DENY");
  HostRun no_txn = run_pipeline("exactly_once", in, "topic: " + out, dlq, unique_name("acl-g"), "acltx");
  expect_failed_with(no_txn, "key 'transactional.id': kafka sink: " + secure_broker().bootstrap +
                                 " does not let this producer use transactional id exactly-acltx-");
  EXPECT_NE(no_txn.log.find("--transactional-id exactly-acltx- --resource-pattern-type prefixed"), std::string::npos)
      << tail_of(no_txn.log, 6000);
  EXPECT_EQ(committed(out), written) << "nothing more was written";
}
