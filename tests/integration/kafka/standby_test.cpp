// Standby replicas against a real broker: two `exactly run` processes (own state dirs,
// one consumer group) with `standby.replicas: 1` keep warm copies of each other's dedupe
// stores by tailing the changelog. One is SIGKILLed while input arrives; the survivor
// takes its partitions over from the warm copies (restoring only a tail, not the
// partition), fences the victim's transactional id (so the transaction it left open is
// aborted at once, not after its 60 s transaction.timeout), and an independent
// read_committed reader finds every id exactly once.
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "output_checks.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

std::string standby_yaml(const std::string& in, const std::string& out, const std::string& group,
                         const fs::path& state) {
  std::string b = kafka_bootstrap();
  return "pipelines:\n"
         "  - name: standby\n"
         "    delivery: exactly_once\n"
         "    commit: { interval: 300ms }\n"
         "    restart: { backoff.initial: 200ms, backoff.max: 2s }\n"
         "    source:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: " + b + "\n        group.id: " + group + "\n"
         "        topics: [" + in + "]\n"
         "        standby.replicas: 1\n"
         "        rdkafka: { session.timeout.ms: 6000 }\n"
         "    transforms:\n      - plugin: dedupe\n        config:\n"
         "          id.json: /messageId\n"
         // Its own changelog: a name derived from the pipeline would be shared with
         // earlier runs on the same broker.
         "          changelog.topic: " + in + "-changelog\n"
         "          state.dir: " + (state / "dedupe").string() + "\n"
         "    sink:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: " + b + "\n        topic: " + out + "\n"
         "        partitioning: input\n        transaction.timeout: 60s\n"
         "        state.dir: " + (state / "sink").string() + "\n";
}

TEST(Standby, ASurvivorTakesOverFromItsWarmCopiesWhileInputArrives) {
  const std::string in = unique_name("sb-in"), out = unique_name("sb-out"), group = unique_name("sb-g");
  const fs::path dir = temp_dir("standby");
  create_in_out_topics(in, out);
  const long long records = 80000, rate = 2000;  // ~40 s of input
  auto producer = produce_while_running(in, records, rate, "0.12", 5, dir / "producer.log");
  std::vector<std::unique_ptr<Host>> hosts;
  for (int i = 0; i < 2; ++i) {
    std::string name = "host-" + std::to_string(i);
    write_file(dir / (name + ".yaml"), standby_yaml(in, out, group, dir / name));
    hosts.push_back(std::make_unique<Host>(name, dir / (name + ".yaml"), dir / (name + ".log")));
    hosts.back()->start();
  }
  // Both members in the group, each keeping the other's two partitions warm.
  bool warm = wait_for([&] {
    for (auto& h : hosts)
      if (count_of(read_file(h->log()), "dedupe: keeping a standby copy of partition") < 2) return false;
    return true;
  }, std::chrono::seconds(60));
  ASSERT_TRUE(warm) << "no standby copies were set up" << log_tails(hosts);
  std::this_thread::sleep_for(std::chrono::seconds(8));  // the owners go on claiming

  // With two members, the survivor-to-be keeps warm exactly the victim's partitions.
  Host& victim = *hosts[0];
  Host& survivor = *hosts[1];
  std::regex standby_line("kafka source: standby for 2 member\\(s\\), 1 replica\\(s\\): ([^\\n]*)");
  std::string slog = read_file(survivor.log());
  std::string warm_set;
  for (auto it = std::sregex_iterator(slog.begin(), slog.end(), standby_line); it != std::sregex_iterator(); ++it)
    warm_set = (*it)[1];
  ASSERT_FALSE(warm_set.empty()) << survivor.log_tail();
  // A kill after the input is complete would prove nothing.
  int code = -1;
  ASSERT_FALSE(producer->exited(&code)) << "the producer finished before the kill; slow it down";
  std::smatch txn;
  std::string vlog = read_file(victim.log());
  ASSERT_TRUE(std::regex_search(vlog, txn, std::regex("transactional\\.id=([^)]+)\\)")))
      << victim.log_tail();
  const std::string victim_txn = txn[1];
  // Killed with a transaction open at the coordinator (otherwise nothing is left to
  // abort): frozen first, looked at, killed if one is open, else thawed and tried again.
  auto txn_state = [&] {
    auto t = kafka_tool("transactions", false);
    size_t at = t.out.find("\"id\":\"" + victim_txn + "\"");
    if (t.exit_code != 0 || at == std::string::npos) return std::string();
    return t.out.substr(at, t.out.find('}', at) - at);
  };
  std::string at_kill;
  for (int attempt = 0; attempt < 20 && at_kill.find("Ongoing") == std::string::npos; ++attempt) {
    if (attempt > 0) {
      victim.signal(SIGCONT);
      std::this_thread::sleep_for(std::chrono::milliseconds(700));
    }
    victim.signal(SIGSTOP);
    at_kill = txn_state();
  }
  ASSERT_NE(at_kill.find("Ongoing"), std::string::npos) << "never caught an open transaction: " << at_kill;
  ASSERT_EQ(victim.stop(SIGKILL), -SIGKILL);
  const auto killed_at = Clock::now();
  std::printf("victim's transaction at the kill: %s\n", at_kill.c_str());
  std::printf("killed %s while input arrives; %s keeps warm: %s\n", victim.name().c_str(),
              survivor.name().c_str(), warm_set.c_str());
  const size_t before = read_file(survivor.log()).size();

  // The survivor takes both of the victim's partitions from its standby copies.
  bool taken = wait_for([&] {
    return count_of(read_file(survivor.log()).substr(before), "(from its standby copy)") >= 2;
  }, std::chrono::seconds(60));
  std::string after = read_file(survivor.log()).substr(before);
  EXPECT_TRUE(taken) << "the survivor did not take over from its warm copies:\n" << tail_of(after, 6000);
  // What it still had to restore is a tail: the claims per partition at the kill were
  // >= 3,500 (8 s + set-up at 2,000/s over 4 partitions, 88% new ids).
  std::regex restored("restored partition '([^']+)' \\(id [0-9]+\\): ([0-9]+) claims");
  for (auto it = std::sregex_iterator(after.begin(), after.end(), restored); it != std::sregex_iterator(); ++it) {
    long long claims = std::stoll((*it)[2]);
    std::printf("takeover restore of %s: %lld claims\n", std::string((*it)[1]).c_str(), claims);
    EXPECT_LT(claims, 1500) << "a warm partition was restored (almost) in full: " << (*it)[0];
  }

  // The victim's open transaction is gone well before the broker would have timed it out
  // (60 s): the survivor fenced its id.
  std::string state_json;
  bool closed = wait_for([&] {
    state_json = txn_state();
    return !state_json.empty() && state_json.find("Ongoing") == std::string::npos &&
           state_json.find("Prepare") == std::string::npos;
  }, std::chrono::seconds(40));
  std::printf("victim's transaction %s after %.1f s: %s\n", closed ? "closed" : "STILL OPEN",
              seconds_since(killed_at), state_json.c_str());
  EXPECT_TRUE(closed) << "the victim's transaction is still open: " << state_json;
  EXPECT_TRUE(wait_for([&] {
    return read_file(survivor.log()).find("fenced " + victim_txn + " in ") != std::string::npos;
  }, std::chrono::seconds(10))) << "the survivor did not fence " << victim_txn << ":\n"
                                << tail_of(read_file(survivor.log()).substr(before), 6000);

  EXPECT_TRUE(wait_for([&] { return producer->exited(&code); }, std::chrono::seconds(180)));
  EXPECT_EQ(code, 0) << tail_of(read_file(dir / "producer.log"), 2000);
  bool caught_up = wait_committed(group, in, records, std::chrono::seconds(180));
  EXPECT_TRUE(caught_up) << "committed " << committed_total(group, in) << " of " << records << log_tails(hosts);
  EXPECT_EQ(survivor.stop(SIGTERM), 0);
  wait_output_settled(out);
  expect_dedupe_exactly_once(in, out, records);
  expect_markers_visible(out);
  if (::testing::Test::HasFailure()) std::printf("%s\n", log_tails(hosts, 6000).c_str());
}

// Two pipelines (other topics) that share one group.id: each plans its standbys over its
// own topics only. Before, a member counted the other pipeline's members and partitions
// as its group's, and kept warm copies of input it never reads.
TEST(Standby, PipelinesSharingAGroupIdKeepNoCopiesOfEachOthersTopics) {
  const std::string in_a = unique_name("sbs-a"), out_a = unique_name("sbs-a-out");
  const std::string in_b = unique_name("sbs-b"), out_b = unique_name("sbs-b-out");
  const std::string group = unique_name("sbs-g");
  const fs::path dir = temp_dir("standby-shared");
  create_in_out_topics(in_a, out_a);
  create_in_out_topics(in_b, out_b);
  std::vector<std::unique_ptr<Host>> hosts;
  const std::pair<std::string, std::string> pairs[] = {{in_a, out_a}, {in_b, out_b}};
  for (int i = 0; i < 2; ++i) {
    std::string name = "host-" + std::to_string(i);
    write_file(dir / (name + ".yaml"), standby_yaml(pairs[i].first, pairs[i].second, group, dir / name));
    hosts.push_back(std::make_unique<Host>(name, dir / (name + ".yaml"), dir / (name + ".log")));
    hosts.back()->start();
  }
  // Both in the group (one generation with both members), each having planned once.
  ASSERT_TRUE(wait_for([&] {
    for (auto& h : hosts)
      if (count_of(read_file(h->log()), "kafka source: standby for") < 1) return false;
    return true;
  }, std::chrono::seconds(60))) << log_tails(hosts);
  std::this_thread::sleep_for(std::chrono::seconds(5));  // a later plan, once both are in
  for (int i = 0; i < 2; ++i) {
    const std::string log = read_file(hosts[static_cast<size_t>(i)]->log());
    const std::string& other = pairs[1 - i].first;
    size_t at = 0;
    int plans = 0;
    while ((at = log.find("kafka source: standby for", at)) != std::string::npos) {
      const std::string line = log.substr(at, log.find('\n', at) - at);
      EXPECT_EQ(line.find(other), std::string::npos) << hosts[static_cast<size_t>(i)]->name() << ": " << line;
      ++plans;
      ++at;
    }
    EXPECT_GE(plans, 1);
    EXPECT_EQ(count_of(log, "dedupe: keeping a standby copy of partition"), 0) << log;
  }
  for (auto& h : hosts) EXPECT_EQ(h->stop(SIGTERM), 0);
  if (::testing::Test::HasFailure()) std::printf("%s\n", log_tails(hosts, 6000).c_str());
}

}  // namespace
