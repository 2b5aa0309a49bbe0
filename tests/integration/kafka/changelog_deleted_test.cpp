// An operator deletes a running pipeline's dedupe changelog topic. Before, every round
// failed at its commit after the delivery timeout and the pipeline aborted for ever with
// only "message(s) timed out" to show; once the topic was created again, the store ahead
// of it was wiped and every id seen before passed again (a QA pass, 2026-12-06: 37,972
// duplicated). Now the pipeline stops with a configuration error naming the topic and
// the fix, the store is kept, and with on.store.behind: ignore the stage goes on with it:
// an independent read_committed reader finds every distinct id exactly once.
#include <gtest/gtest.h>

#include <csignal>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "output_checks.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

TEST(ChangelogDeleted, ThePipelineStopsNamingTheTopicAndTheKeptStoresGoOnWithoutDuplicates) {
  const std::string in = unique_name("cldel-in"), out = unique_name("cldel-out"),
                    group = unique_name("cldel-g"), changelog = in + "-changelog";
  const fs::path dir = temp_dir("changelog-deleted");
  create_in_out_topics(in, out);
  write_file(dir / "host.yaml", dedupe_host_yaml("cldel", in, out, group, dir / "state"));
  Host host("host", dir / "host.yaml", dir / "host.log");
  const long long records = 24000;
  auto producer = produce_while_running(in, records, 1500, "0.2", 41, dir / "producer.log");
  host.start();
  ASSERT_TRUE(wait_for([&] { return committed_total(group, in) > 3000; }, std::chrono::seconds(90)))
      << host.log_tail();
  kafka_tool("delete-topic --topic " + changelog);
  int code = -1;
  ASSERT_TRUE(wait_for([&] { return host.exited_by_itself(&code); }, std::chrono::seconds(120)))
      << "the host kept going after its changelog was deleted\n" << host.log_tail();
  EXPECT_EQ(code, 1) << host.log_tail();
  const std::string log = read_file(host.log());
  EXPECT_NE(log.find("changelog topic " + changelog + " no longer exists"), std::string::npos) << host.log_tail();
  EXPECT_NE(log.find("cleanup.policy=compact"), std::string::npos) << host.log_tail();

  // The operator's fix: the topic again (empty, compacted), the stores kept. The broker
  // creates topics on first use: the sink's own metadata requests may have made it again
  // as an ordinary topic, which goes first.
  kafka_tool("delete-topic --topic " + changelog);
  kafka_tool("create-topic --topic " + changelog + " --partitions 4 --config cleanup.policy=compact");
  write_file(dir / "host.yaml", dedupe_host_yaml("cldel", in, out, group, dir / "state", "",
                                                 "          on.store.behind: ignore\n"));
  host.start();
  EXPECT_TRUE(wait_for([&] { return count_of(read_file(host.log()), "deleted and re-created while the group kept its offsets") >= 1; },
                       std::chrono::seconds(60)))
      << host.log_tail();
  EXPECT_EQ(producer->wait(), 0) << read_file(dir / "producer.log");
  EXPECT_TRUE(wait_committed(group, in, records, std::chrono::seconds(120)))
      << "committed " << committed_total(group, in) << " of " << records << "\n" << host.log_tail();
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
  wait_output_settled(out);
  auto v = expect_dedupe_exactly_once(in, out, records);
  EXPECT_GT(json_number(v.out, "input"), json_number(v.out, "distinct_ids"));
}

}  // namespace
