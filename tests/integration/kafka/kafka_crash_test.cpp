// Exactly-once and no-loss claims, proven the hard way: the host is killed with
// SIGKILL at random moments, restarted each time, and an independent read_committed
// reader (tests/tools, Java, not our code) compares output with input.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <regex>
#include <set>

#include "kafka_env.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

struct Topics {
  std::string in, out, group;
  fs::path dir;
  long long input_total = 0;
};

Topics make_topics(const std::string& tag, int partitions) {
  Topics s;
  s.in = unique_name(tag + "-in");
  s.out = unique_name(tag + "-out");
  s.group = unique_name(tag + "-g");
  s.dir = temp_dir(tag);
  kafka_tool("create-topic --topic " + s.in + " --partitions " + std::to_string(partitions));
  kafka_tool("create-topic --topic " + s.out + " --partitions " + std::to_string(partitions));
  return s;
}

std::string pipeline_yaml(const Topics& s, const std::string& delivery, const std::string& member,
                          const std::string& transforms = "", const std::string& state = "state") {
  std::string b = kafka_bootstrap();
  return "pipelines:\n"
         "  - name: copy\n"
         "    delivery: " + delivery + "\n"
         "    commit: { interval: 300ms, max.records: 20000 }\n"
         "    restart: { backoff.initial: 200ms, backoff.max: 2s }\n"
         "    source:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: " + b + "\n        group.id: " + s.group + "\n"
         "        topics: [" + s.in + "]\n"
         "        rdkafka: { session.timeout.ms: 6000, group.instance.id: " + member + " }\n" +
         transforms +
         "    sink:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: " + b + "\n        topic: " + s.out + "\n"
         "        partitioning: input\n        state.dir: " + (s.dir / state).string() + "\n";
}

long long committed_total(const Topics& s) {
  auto r = kafka_tool("consume-group-offsets --group " + s.group + " --topic " + s.in, false);
  if (r.exit_code != 0) return -1;
  return json_number(r.out, "total");
}

// The input, produced by the referee while the host runs (paced so that it outlasts
// the kills: a host killed after its input is complete proves nothing).
std::unique_ptr<Child> produce_live(const Topics& s, long long n, long long rate,
                                    const std::string& extra) {
  std::vector<std::string> argv = {tools_dir() + "/kafka-tool.sh", "produce", "--topic", s.in,
                                   "--count", std::to_string(n), "--partitions", "4",
                                   "--rate", std::to_string(rate), "--bootstrap", kafka_bootstrap()};
  for (const auto& a : lines_of(extra)) argv.push_back(a);
  return std::make_unique<Child>(argv, s.dir / "producer.log");
}

// Starts the host on `config`, kills it with SIGKILL after a random delay, `kills`
// times, each while `producer` is still producing; then runs it until the group has
// committed the whole input and stops it with SIGTERM. Returns the log.
std::string run_with_kills(const Topics& s, const fs::path& config, int kills, uint32_t seed,
                           Child* producer = nullptr) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(1500, 5000);
  fs::path log = s.dir / "host.log";
  for (int k = 0; k < kills; ++k) {
    Child c({exactly_bin(), "run", "--no-watch", config.string()}, log);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    int code = 0;
    if (producer != nullptr)
      EXPECT_FALSE(producer->exited(&code)) << "kill " << k + 1 << " came after the input was complete";
    c.kill(SIGKILL);
    EXPECT_EQ(c.wait(), -SIGKILL) << "the host exited before it could be killed";
    // No progress read here: each is a JVM start (1-3 s on a loaded machine), and with
    // one per cycle the kills once drifted past the end of the input.
  }
  if (producer != nullptr)
    EXPECT_EQ(producer->wait(), 0) << read_file(s.dir / "producer.log");
  Child c({exactly_bin(), "run", "--no-watch", config.string()}, log);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  while (committed_total(s) < s.input_total && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::seconds(2));
  c.kill(SIGTERM);
  EXPECT_EQ(c.wait(), 0);
  EXPECT_GE(committed_total(s), s.input_total) << "the pipeline never caught up";
  return read_file(log);
}

TEST(KafkaCrash, ExactlyOnceCopySurvivesRepeatedSigkill) {
  const long long n = heavy() ? 1000000 : 200000;
  const int kills = heavy() ? 20 : 10;
  Topics s = make_topics("eos", 4);
  s.input_total = n;
  write_file(s.dir / "p.yaml", pipeline_yaml(s, "exactly_once", "crash-eos"));
  // Kills come at most 5 s apart (plus a host start each, slower on a loaded machine):
  // the input keeps arriving for longer than all of that.
  auto producer = produce_live(s, n, n / (kills * 6 + 15), "--size\n150\n--seed\n11");
  std::string log = run_with_kills(s, s.dir / "p.yaml", kills, 1234, producer.get());
  auto v = kafka_tool("verify --input-topic " + s.in + " --output-topic " + s.out + " --mode copy",
                      false);
  std::printf("independent reader: %s", v.out.c_str());
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err << "\nhost log tail:\n"
                            << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
  EXPECT_EQ(json_number(v.out, "missing"), 0);
  EXPECT_EQ(json_number(v.out, "duplicated"), 0);
  EXPECT_EQ(json_number(v.out, "order_violations"), 0);
  EXPECT_EQ(json_number(v.out, "output"), n);
  // Nothing left hanging: fresh markers on every output partition become visible.
  auto m = kafka_tool("marker-check --topic " + s.out + " --timeout-s 20", false);
  EXPECT_EQ(m.exit_code, 0) << m.out << m.err;
}

TEST(KafkaCrash, AtLeastOnceLosesNothingAcrossSigkill) {
  const long long n = 60000;
  Topics s = make_topics("alo", 4);
  s.input_total = n;
  write_file(s.dir / "p.yaml", pipeline_yaml(s, "at_least_once", "crash-alo"));
  auto producer = produce_live(s, n, n / (3 * 5 + 15), "--seed\n5");
  run_with_kills(s, s.dir / "p.yaml", 3, 99, producer.get());
  auto v = kafka_tool("verify --allow-duplicates --input-topic " + s.in + " --output-topic " +
                          s.out + " --mode copy",
                      false);
  std::printf("independent reader: %s", v.out.c_str());
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_EQ(json_number(v.out, "missing"), 0);
}

TEST(KafkaCrash, DedupeEmitsEveryIdExactlyOnceAcrossSigkill) {
  // 400K records: ~88K ids a partition, so even the default run folds 4 times a
  // partition and merges (claims.files.max: 2) while it is killed.
  const long long n = heavy() ? 1000000 : 400000;
  const int kills = heavy() ? 20 : 10;
  Topics s = make_topics("dedupe", 4);
  s.input_total = n;
  // A 1 MiB write buffer: each store folds every ~22K claims (its claims files), so the
  // kills land before, during and after folds, not only in a first fill; past two files
  // a store merges neighbours, so they land around merges too. Retention keeps 40K ids a
  // partition, so stores evict (whole files) while killed as well; the input repeats only
  // ids of its last 20K originals (~5K a partition), all still retained.
  std::string dedupe = "    transforms:\n      - plugin: dedupe\n        config:\n"
                       "          id.json: /messageId\n"
                       "          rocksdb.write.buffer.size: 1048576\n"
                       "          claims.files.max: 2\n"
                       "          retention.max.keys: 40000\n"
                       "          state.dir: " + (s.dir / "dedupe").string() + "\n";
  write_file(s.dir / "p.yaml", pipeline_yaml(s, "exactly_once", "crash-dedupe", dedupe));
  // Keyed by id so duplicates share a partition; 12% of records repeat an earlier id.
  auto producer = produce_live(s, n, n / (kills * 6 + 15),  // as in the copy test above
                               "--keyed\n--size\n150\n--dup-ratio\n0.12\n--dup-window\n20000\n--seed\n21");
  std::string log = run_with_kills(s, s.dir / "p.yaml", kills, 4321, producer.get());
  auto v = kafka_tool("verify --input-topic " + s.in + " --output-topic " + s.out + " --mode dedupe",
                      false);
  std::printf("independent reader: %s", v.out.c_str());
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err << "\nhost log tail:\n"
                            << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
  EXPECT_EQ(json_number(v.out, "missing"), 0);
  EXPECT_EQ(json_number(v.out, "duplicated"), 0);
  EXPECT_EQ(json_number(v.out, "wrong_payload"), 0);
  EXPECT_GT(json_number(v.out, "input"), json_number(v.out, "distinct_ids"));
  EXPECT_NE(log.find("merged claims files"), std::string::npos) << "no store merged while killed";
  // Files eviction removed before a kill are not taken for files lost (the meta on disk
  // may not show the floor that let them go yet): no store was set aside.
  EXPECT_EQ(log.find("missing its claims file"), std::string::npos) << log;
  EXPECT_EQ(log.find("is restored from changelog"), std::string::npos) << log;
  int evicting = 0;
  for (auto& e : std::filesystem::recursive_directory_iterator(s.dir / "dedupe"))
    if (e.path().filename() == "claims-evicted" && read_file(e.path()) != "0\n") ++evicting;
  EXPECT_GT(evicting, 0) << "no store evicted a claims file";
  // Kills left stores behind their changelog, and the next start brought them back.
  EXPECT_NE(log.find("dedupe: restored partition"), std::string::npos)
      << "no kill left a store for its changelog to bring back";
  // With a changelog the stores write no WAL (what a kill takes from a memtable is in
  // the changelog): the verdict above holds without one.
  uintmax_t wal_bytes = 0;
  for (auto& e : std::filesystem::recursive_directory_iterator(s.dir / "dedupe"))
    if (e.is_regular_file() && e.path().extension() == ".log") wal_bytes += e.file_size();
  EXPECT_EQ(wal_bytes, 0u) << "a dedupe store wrote a WAL beside its changelog";
}

TEST(KafkaCrash, ZombieWritesNeverBecomeVisible) {
  const long long n = 100000;
  Topics s = make_topics("zombie", 4);
  kafka_tool("produce --topic " + s.in + " --count " + std::to_string(n) + " --partitions 4 --seed 8");
  s.input_total = n;
  // Two host instances (own state dirs, own transactional ids, own members).
  write_file(s.dir / "a.yaml", pipeline_yaml(s, "exactly_once", "zombie-a", "", "state-a"));
  write_file(s.dir / "b.yaml", pipeline_yaml(s, "exactly_once", "zombie-b", "", "state-b"));
  Child a({exactly_bin(), "run", "--no-watch", (s.dir / "a.yaml").string()}, s.dir / "a.log");
  std::this_thread::sleep_for(std::chrono::seconds(4));
  a.kill(SIGSTOP);  // A freezes mid-work, holding an open transaction
  Child b({exactly_bin(), "run", "--no-watch", (s.dir / "b.yaml").string()}, s.dir / "b.log");
  // Past A's session timeout B owns every partition and makes progress.
  std::this_thread::sleep_for(std::chrono::seconds(12));
  a.kill(SIGCONT);  // the zombie wakes up and tries to go on
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (committed_total(s) < n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::seconds(2));
  a.kill(SIGTERM);
  b.kill(SIGTERM);
  a.wait();
  b.wait();
  auto v = kafka_tool("verify --input-topic " + s.in + " --output-topic " + s.out + " --mode copy",
                      false);
  std::printf("independent reader: %s", v.out.c_str());
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err << "\nA:\n"
                            << read_file(s.dir / "a.log").substr(0, 6000);
  EXPECT_EQ(json_number(v.out, "duplicated"), 0);
  EXPECT_EQ(json_number(v.out, "missing"), 0);
}

// kafka -> file, exactly_once: the file sink stores the positions with its output, the
// group never sees them unless the host mirrors them. A member that joins and leaves
// again must not make the first one start its partitions over (before the fix: the
// first member re-read every moved partition from the beginning).
TEST(KafkaRebalance, FileSinkKeepsEveryRecordOnceAcrossAMemberJoiningAndLeaving) {
  const long long n = 50000;
  Topics s = make_topics("file-rebal", 4);
  s.input_total = n;
  auto yaml = [&](const std::string& host) {
    return "pipelines:\n"
           "  - name: tofile\n"
           "    delivery: exactly_once\n"
           "    commit: { interval: 300ms }\n"
           "    source:\n      plugin: kafka\n      config:\n"
           "        bootstrap.servers: " + kafka_bootstrap() + "\n        group.id: " + s.group +
           "\n        topics: [" + s.in + "]\n"
           "        rdkafka: { session.timeout.ms: 6000 }\n"
           "    sink: { plugin: file, config: { path: " + (s.dir / (host + ".out")).string() + " } }\n";
  };
  write_file(s.dir / "a.yaml", yaml("a"));
  write_file(s.dir / "b.yaml", yaml("b"));
  auto producer = produce_live(s, n, 5000, "--seed\n31");  // ~10 s of input
  Child a({exactly_bin(), "run", "--no-watch", (s.dir / "a.yaml").string()}, s.dir / "a.log");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  Child b({exactly_bin(), "run", "--no-watch", (s.dir / "b.yaml").string()}, s.dir / "b.log");
  // At least 4 s, and until `b` has written records (the join's rebalance took longer on
  // a loaded machine), while input still arrives.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  int code = 0;
  bool input_done = producer->exited(&code);  // reaped once: its code is kept here
  while (!input_done && lines_of(read_file(s.dir / "b.out")).empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    input_done = producer->exited(&code);
  }
  EXPECT_FALSE(input_done) << "the member left after the input was complete";
  b.kill(SIGTERM);  // leaves the group: its partitions go back to `a`
  EXPECT_EQ(b.wait(), 0);
  EXPECT_EQ(input_done ? code : producer->wait(), 0) << read_file(s.dir / "producer.log");
  // Done when both files together hold the input (or stop growing).
  auto count_lines = [&] {
    size_t lines = 0;
    for (const char* h : {"a.out", "b.out"}) lines += lines_of(read_file(s.dir / h)).size();
    return lines;
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  size_t last = 0;
  auto quiet_since = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    size_t now = count_lines();
    if (now != last) quiet_since = std::chrono::steady_clock::now();
    last = now;
    if (now >= static_cast<size_t>(n) &&
        std::chrono::steady_clock::now() - quiet_since > std::chrono::seconds(5))
      break;
  }
  a.kill(SIGTERM);
  EXPECT_EQ(a.wait(), 0);
  std::map<std::string, int> seen;
  std::regex id("\"messageId\":\"([^\"]+)\"");
  for (const char* h : {"a.out", "b.out"})
    for (const auto& line : lines_of(read_file(s.dir / h))) {
      std::smatch m;
      if (std::regex_search(line, m, id)) ++seen[m[1]];
    }
  long long dup = 0;
  for (auto& [k, c] : seen) dup += c > 1 ? c - 1 : 0;
  std::printf("file sinks: %zu distinct ids, %lld repeated, a=%zu b=%zu lines\n", seen.size(), dup,
              lines_of(read_file(s.dir / "a.out")).size(), lines_of(read_file(s.dir / "b.out")).size());
  EXPECT_EQ(static_cast<long long>(seen.size()), n) << read_file(s.dir / "a.log").substr(0, 4000);
  EXPECT_EQ(dup, 0);
  EXPECT_GT(lines_of(read_file(s.dir / "b.out")).size(), 0u) << "the second member never took part";
}

// Static membership (eager assignor + group.instance.id from the state dir, the same
// YAML on both hosts): a host killed and restarted within session.timeout.ms gets its
// partitions back and the other host is never rebalanced. Output stays exactly once.
TEST(KafkaRebalance, StaticMemberRestartMovesNoPartition) {
  const long long n = 40000;
  Topics s = make_topics("static", 4);
  s.input_total = n;
  auto yaml = [&](const std::string& host) {
    std::string y = pipeline_yaml(s, "exactly_once", "unused", "", host);
    // No hand-set group.instance.id: static.membership derives one per state dir.
    y.replace(y.find("rdkafka: { session.timeout.ms: 6000, group.instance.id: unused }"),
              std::string("rdkafka: { session.timeout.ms: 6000, group.instance.id: unused }").size(),
              "rdkafka: { session.timeout.ms: 15000 }\n        static.membership: true\n"
              "        state.dir: " + (s.dir / host).string());
    return y;
  };
  write_file(s.dir / "a.yaml", yaml("state-a"));
  write_file(s.dir / "b.yaml", yaml("state-b"));
  auto producer = produce_live(s, n, 2000, "--seed\n41");  // ~20 s of input
  auto count = [&](const std::string& log, const std::string& what) {
    size_t c = 0;
    for (const auto& l : lines_of(read_file(s.dir / log))) c += l.find(what) != std::string::npos;
    return c;
  };
  auto a = std::make_unique<Child>(
      std::vector<std::string>{exactly_bin(), "run", "--no-watch", (s.dir / "a.yaml").string()},
      s.dir / "a.log");
  Child b({exactly_bin(), "run", "--no-watch", (s.dir / "b.yaml").string()}, s.dir / "b.log");
  // Settled: both own partitions.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((count("a.log", "] assigned ") == 0 || count("b.log", "] assigned ") == 0 ||
          count("a.log", "] assigned ") + count("b.log", "] assigned ") -
                  count("a.log", "] revoked ") - count("b.log", "] revoked ") != 4) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  // What a host owns, from its log: assignments minus revocations, from line `from` on.
  auto owned = [&](const std::string& log, size_t from) {
    std::set<std::string> parts;
    auto lines = lines_of(read_file(s.dir / log));
    for (size_t i = from; i < lines.size(); ++i) {
      const std::string& l = lines[i];
      auto name = [&](const char* what) {
        auto at = l.find(what);
        if (at == std::string::npos) return std::string();
        std::string rest = l.substr(at + std::strlen(what));
        return rest.substr(0, rest.find(' '));
      };
      if (auto a = name("] assigned "); !a.empty()) parts.insert(a);
      if (auto r = name("] revoked "); !r.empty()) parts.erase(r);
    }
    return parts;
  };
  const size_t b_revoked = count("b.log", "] revoked ");
  const std::set<std::string> a_owned = owned("a.log", 0);
  const size_t a_lines = lines_of(read_file(s.dir / "a.log")).size();
  ASSERT_FALSE(a_owned.empty());
  int code = 0;
  ASSERT_FALSE(producer->exited(&code)) << "the input ended before the restart";
  a->kill(SIGKILL);
  EXPECT_EQ(a->wait(), -SIGKILL);
  a = std::make_unique<Child>(
      std::vector<std::string>{exactly_bin(), "run", "--no-watch", (s.dir / "a.yaml").string()},
      s.dir / "a.log");
  EXPECT_EQ(producer->wait(), 0) << read_file(s.dir / "producer.log");
  deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (committed_total(s) < n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::seconds(1));
  // The restarted host got its partitions back; the other one never gave any up.
  EXPECT_EQ(owned("a.log", a_lines), a_owned) << read_file(s.dir / "a.log").substr(0, 3000);
  EXPECT_EQ(count("b.log", "] revoked "), b_revoked) << "the restart rebalanced the other host";
  a->kill(SIGTERM);
  b.kill(SIGTERM);
  a->wait();
  // A static member's stop does not leave the group: said, since its partitions wait.
  EXPECT_EQ(count("a.log", "the partitions it had wait up to session.timeout.ms (15000 ms)"), 1u)
      << read_file(s.dir / "a.log").substr(0, 3000);
  b.wait();
  EXPECT_GE(committed_total(s), n);
  auto v = kafka_tool("verify --input-topic " + s.in + " --output-topic " + s.out + " --mode copy",
                      false);
  std::printf("independent reader: %s", v.out.c_str());
  EXPECT_EQ(json_number(v.out, "missing"), 0);
  EXPECT_EQ(json_number(v.out, "duplicated"), 0);
}

// Two live hosts with one group.instance.id (set by hand, or a copied state.dir): the
// broker fences the older member. Its error says what a fence of the instance id means
// (QA r10: the same fence came to every static host, each with its own id, when the
// broker coordinating the group died, and the bare librdkafka text pointed nowhere).
TEST(KafkaRebalance, AFencedInstanceIdIsExplained) {
  Topics s = make_topics("fenced-instance", 2);
  write_file(s.dir / "a.yaml", pipeline_yaml(s, "exactly_once", "one-id", "", "state-a"));
  write_file(s.dir / "b.yaml", pipeline_yaml(s, "exactly_once", "one-id", "", "state-b"));
  Child a({exactly_bin(), "run", "--no-watch", (s.dir / "a.yaml").string()}, s.dir / "a.log");
  ASSERT_TRUE(wait_for_text(s.dir / "a.log", "] assigned ", 60)) << read_file(s.dir / "a.log");
  Child b({exactly_bin(), "run", "--no-watch", (s.dir / "b.yaml").string()}, s.dir / "b.log");
  const std::string fenced = "FENCED_INSTANCE_ID";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (read_file(s.dir / "a.log").find(fenced) == std::string::npos &&
         read_file(s.dir / "b.log").find(fenced) == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  a.kill(SIGTERM);
  b.kill(SIGTERM);
  a.wait();
  b.wait();
  const std::string logs = read_file(s.dir / "a.log") + read_file(s.dir / "b.log");
  ASSERT_NE(logs.find(fenced), std::string::npos) << logs.substr(0, 4000);
  EXPECT_NE(logs.find("The group fenced this member's group.instance.id one-id"), std::string::npos)
      << logs.substr(0, 4000);
  EXPECT_NE(logs.find("another live host uses the same group.instance.id"), std::string::npos)
      << logs.substr(0, 4000);
}

}  // namespace
