// Scale-out: one pipeline, one consumer group, several host processes, each with its own
// state directories (same pipeline name, group, topics). While a background producer
// writes the input, random hosts are SIGKILLed and restarted on their own state, one
// leaves for good and a new one joins, so partitions (and the dedupe stores behind them)
// move between hosts. Then an independent read_committed reader (tests/tools, Java, not
// our code) checks that every distinct id left exactly once, with the payload of its
// first occurrence (or, at least once: that no id was lost). The exactly-once run keeps
// standby copies (standby.replicas: 1), so warm stores are handed over, dropped and
// re-opened with every move.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <cstdlib>
#include <functional>
#include <random>

#include "hosts.hpp"
#include "redis_server.hpp"
#include "output_checks.hpp"
#include "kafka_env.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

enum class Fault { KillRestart, Join, Leave, Custom };

// A scenario-specific event (a Redis restart, a shard change) at a fraction of the
// production time; with `reload`, every host's YAML is written again afterwards and the
// running hosts get SIGHUP (hot reload).
struct CustomEvent {
  double slot = 0.5;
  std::string name;
  std::function<void()> action;
  bool reload = false;
};

struct Scenario {
  std::string tag;
  std::string delivery;  // exactly_once | at_least_once
  long long records = 0;
  long long rate = 0;    // records per second of the background producer
  int initial_hosts = 3;
  int kill_restarts = 10;
  int joins = 1, leaves = 1;
  // Where joins and leaves fall, as fractions of the production time (kills: anywhere).
  double join_from = 0.5, join_to = 0.7;
  double leave_from = 0.3, leave_to = 0.5;
  uint32_t seed = 1;
  int standby_replicas = 0;  // kafka source standby.replicas on every host
  std::chrono::seconds catch_up_limit{300};
  // The dedupe stage's YAML under "transforms:" (read whenever a host's file is
  // written); empty: the RocksDB `dedupe` with its state under the host's dir.
  std::function<std::string()> transform;
  std::vector<CustomEvent> custom;
  long long dup_window = 0;  // producer --dup-window (0: any earlier record)
};

struct Outcome {
  std::string in, out, group;
  fs::path dir, producer_log;
  long long produced = -1;
  long long committed = -1;
  double catch_up_s = -1;
  int faults = 0;
  int faults_while_producing = 0;  // input still arriving: the only kills that prove anything
  std::vector<std::unique_ptr<Host>> hosts;
};

uint32_t seed_or_env(uint32_t dflt) {
  const char* s = std::getenv("EXACTLY_SCALE_SEED");
  return s && *s ? static_cast<uint32_t>(std::stoul(s)) : dflt;
}

// Identical for every host but for the state directories under `state`.
std::string host_yaml(const Outcome& o, const Scenario& sc, const fs::path& state) {
  std::string b = kafka_bootstrap();
  return "pipelines:\n"
         "  - name: scale\n"
         "    delivery: " + sc.delivery + "\n"
         "    commit: { interval: 300ms, max.records: 20000 }\n"
         "    restart: { backoff.initial: 200ms, backoff.max: 2s }\n"
         "    source:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: " + b + "\n        group.id: " + o.group + "\n"
         "        topics: [" + o.in + "]\n"
         "        standby.replicas: " + std::to_string(sc.standby_replicas) + "\n"
         "        rdkafka: { session.timeout.ms: 6000 }\n"
         "    transforms:\n" +
         (sc.transform ? sc.transform()
                       : "      - plugin: dedupe\n        config:\n"
                         "          id.json: /messageId\n"
                         // Folds every ~22K claims (claims files) on the hosts and in
                         // their restores, and merges past two files, so kills and moves
                         // meet folded and merging stores.
                         "          rocksdb.write.buffer.size: 1048576\n"
                         "          claims.files.max: 2\n"
                         "          changelog.topic: " + o.in + "-changelog\n"
                         "          state.dir: " + (state / "dedupe").string() + "\n") +
         "    sink:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: " + b + "\n        topic: " + o.out + "\n"
         "        partitioning: input\n        state.dir: " + (state / "sink").string() + "\n";
}

// Runs the scenario up to the point where the survivors are stopped with SIGTERM.
Outcome run_scale_out(const Scenario& sc) {
  Outcome o;
  o.in = unique_name(sc.tag + "-in");
  o.out = unique_name(sc.tag + "-out");
  o.group = unique_name(sc.tag + "-g");
  o.dir = temp_dir(sc.tag);
  kafka_tool("create-topic --topic " + o.in + " --partitions 4");
  kafka_tool("create-topic --topic " + o.out + " --partitions 4");

  std::mt19937 rng(sc.seed);
  const auto t0 = Clock::now();
  auto say = [&](const std::string& m) {
    std::printf("[%7.1fs] %s\n", seconds_since(t0), m.c_str());
    std::fflush(stdout);
  };
  say(sc.tag + ": seed " + std::to_string(sc.seed) + ", " + std::to_string(sc.records) +
      " records at " + std::to_string(sc.rate) + "/s, dir " + o.dir.string());

  std::vector<Host*> live;  // hosts that are part of the run (up, or down between kill and restart)
  auto add_host = [&]() -> Host& {
    std::string name = "host-" + std::to_string(o.hosts.size());
    fs::path yaml = o.dir / (name + ".yaml");
    write_file(yaml, host_yaml(o, sc, o.dir / name));
    o.hosts.push_back(std::make_unique<Host>(name, yaml, o.dir / (name + ".log")));
    live.push_back(o.hosts.back().get());
    return *o.hosts.back();
  };

  // The background producer: the referee's own `produce`, paced, concurrent with the hosts.
  o.producer_log = o.dir / "producer.log";
  std::vector<std::string> produce = {
      tools_dir() + "/kafka-tool.sh", "produce", "--topic", o.in, "--count",
      std::to_string(sc.records), "--partitions", "4", "--keyed", "--dup-ratio", "0.12",
      "--dup-variant", "--size", "150", "--seed", std::to_string(sc.seed), "--rate",
      std::to_string(sc.rate), "--bootstrap", kafka_bootstrap()};
  if (sc.dup_window > 0) produce.insert(produce.end(), {"--dup-window", std::to_string(sc.dup_window)});
  Child producer(produce, o.producer_log);
  say("producer started (pid " + std::to_string(producer.pid()) + ")");
  for (int i = 0; i < sc.initial_hosts; ++i) add_host().start();
  say(std::to_string(sc.initial_hosts) + " host(s) started");

  bool producer_done = false;
  int producer_code = -1;
  std::map<Host*, int> self_exits;
  // Sleeps until `until`, noticing the producer's end and hosts that died on their own
  // (a failure: restarted up to 5 times so the run still says something).
  auto watch = [&](Clock::time_point until) {
    do {
      if (!producer_done && producer.exited(&producer_code)) {
        producer_done = true;
        say("producer finished with exit code " + std::to_string(producer_code));
      }
      for (Host* h : live) {
        int code = 0;
        if (!h->exited_by_itself(&code)) continue;
        ADD_FAILURE() << h->name() << " exited by itself with " << code << " at "
                      << seconds_since(t0) << " s:\n" << h->log_tail(3000);
        say(h->name() + " EXITED BY ITSELF with " + std::to_string(code));
        if (++self_exits[h] <= 5) h->start();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } while (Clock::now() < until);
  };

  // The fault plan: kills anywhere in the production time, joins and leaves in windows.
  struct Event {
    double slot;
    Fault kind;
    const CustomEvent* custom = nullptr;
  };
  std::vector<Event> plan;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int i = 0; i < sc.kill_restarts; ++i) plan.push_back({unit(rng), Fault::KillRestart});
  for (int i = 0; i < sc.joins; ++i)
    plan.push_back({sc.join_from + unit(rng) * (sc.join_to - sc.join_from), Fault::Join});
  for (int i = 0; i < sc.leaves; ++i)
    plan.push_back({sc.leave_from + unit(rng) * (sc.leave_to - sc.leave_from), Fault::Leave});
  for (const CustomEvent& c : sc.custom) plan.push_back({c.slot, Fault::Custom, &c});
  std::sort(plan.begin(), plan.end(), [](const Event& a, const Event& b) { return a.slot < b.slot; });
  const double production_s = double(sc.records) / double(sc.rate);
  std::uniform_int_distribution<int> restart_delay_ms(200, 3000);

  auto last = t0 - std::chrono::seconds(10);
  int leaves_done = 0;
  for (const Event& e : plan) {
    // Planned within the first 80% of production: restart delays and the 1 s spacing
    // push faults later, and every one of them must still meet arriving input.
    auto at = t0 + std::chrono::milliseconds(static_cast<long long>(
                       (2.0 + e.slot * std::max(1.0, 0.8 * production_s - 2.0)) * 1000));
    watch(std::max(at, last + std::chrono::seconds(1)));  // at least 1 s between faults
    last = Clock::now();
    const bool input_arriving = !producer_done;
    if (e.kind == Fault::Custom) {
      say(e.custom->name);
      e.custom->action();
      if (e.custom->reload) {
        for (auto& h : o.hosts) write_file(o.dir / (h->name() + ".yaml"), host_yaml(o, sc, o.dir / h->name()));
        for (Host* h : live)
          if (h->running()) {
            h->wait_started(std::chrono::seconds(60));
            h->signal(SIGHUP);
          }
        say("YAML rewritten on every host, SIGHUP sent to the running ones");
      }
    } else if (e.kind == Fault::Join) {
      Host& h = add_host();
      h.start();
      say("JOIN " + h.name() + " (new state dir), " + std::to_string(live.size()) + " host(s)");
    } else {
      std::uniform_int_distribution<size_t> pick(0, live.size() - 1);
      Host* h = live[pick(rng)];
      if (e.kind == Fault::Leave && live.size() < 2) {
        say("leave skipped: only " + h->name() + " is left");
        continue;
      }
      // Leaves alternate SIGKILL (crash, never back) and SIGTERM (orderly scale-down).
      int sig = e.kind == Fault::Leave && leaves_done % 2 == 1 ? SIGTERM : SIGKILL;
      std::string pid = std::to_string(h->pid());
      int code = h->stop(sig);
      EXPECT_EQ(code, sig == SIGKILL ? -SIGKILL : 0) << h->name() << " ended differently than told";
      if (e.kind == Fault::Leave) {
        ++leaves_done;
        live.erase(std::find(live.begin(), live.end(), h));
        say(std::string("LEAVE ") + h->name() + " (pid " + pid + ", " + strsignal(sig) +
            ", never restarted), " + std::to_string(live.size()) + " host(s)");
      } else {
        int delay = restart_delay_ms(rng);
        say("SIGKILL " + h->name() + " (pid " + pid + "), restart in " + std::to_string(delay) + " ms");
        watch(Clock::now() + std::chrono::milliseconds(delay));
        h->start();
      }
    }
    ++o.faults;
    if (input_arriving) ++o.faults_while_producing;
  }
  say("fault plan done: " + std::to_string(o.faults) + " faults, " +
      std::to_string(o.faults_while_producing) + " while input was still arriving");
  EXPECT_EQ(o.faults_while_producing, o.faults)
      << "faults landed after the input was complete; they prove nothing (slow the producer)";

  auto producer_deadline = Clock::now() + std::chrono::seconds(static_cast<long long>(production_s * 2 + 120));
  while (!producer_done && Clock::now() < producer_deadline) watch(Clock::now() + std::chrono::seconds(1));
  if (!producer_done) {
    ADD_FAILURE() << "the producer did not finish in time:\n" << tail_of(read_file(o.producer_log), 3000);
    producer.kill(SIGKILL);
    producer_code = producer.wait();
  }
  EXPECT_EQ(producer_code, 0) << tail_of(read_file(o.producer_log), 3000);
  for (const auto& line : lines_of(read_file(o.producer_log)))
    if (line.find("\"produced\":") != std::string::npos) o.produced = json_number(line, "produced");
  EXPECT_EQ(o.produced, sc.records) << tail_of(read_file(o.producer_log), 3000);
  const long long target = o.produced > 0 ? o.produced : sc.records;

  // Catching up: from "producer done and last fault done" to "the group's committed
  // offsets cover the whole input".
  const auto quiet = Clock::now();
  say("waiting (at most " + std::to_string(sc.catch_up_limit.count()) + " s) for the group to commit " +
      std::to_string(target) + " input records");
  auto next_report = quiet + std::chrono::seconds(15);
  while (true) {
    o.committed = committed_total(o.group, o.in);
    if (o.committed >= target || Clock::now() > quiet + sc.catch_up_limit) break;
    if (Clock::now() >= next_report) {
      say("committed " + std::to_string(o.committed) + " of " + std::to_string(target));
      next_report += std::chrono::seconds(15);
    }
    watch(Clock::now() + std::chrono::seconds(2));
  }
  if (o.committed >= target) {
    o.catch_up_s = seconds_since(quiet);
    say("caught up " + std::to_string(o.catch_up_s) + " s after the producer and the last fault");
  } else {
    say("did NOT catch up: committed " + std::to_string(o.committed) + " of " + std::to_string(target));
  }
  EXPECT_GE(o.committed, target) << "the group never caught up within " << sc.catch_up_limit.count() << " s";

  for (Host* h : live) h->signal(SIGTERM);
  for (Host* h : live) {
    int code = h->reap();
    EXPECT_EQ(code, 0) << h->name() << " did not stop cleanly on SIGTERM";
  }
  std::string starts;
  for (auto& h : o.hosts) starts += " " + h->name() + "x" + std::to_string(h->starts());
  say("survivors stopped; starts:" + starts);
  return o;
}

void print_logs_on_failure(const Outcome& o) {
  if (!::testing::Test::HasFailure()) return;
  std::printf("%s\n===== producer log tail:\n%s\n", log_tails(o.hosts).c_str(),
              tail_of(read_file(o.producer_log), 1500).c_str());
}

TEST(ScaleOut, DedupeExactlyOnceAcrossHostsKillsJoinsAndLeaves) {
  Scenario sc;
  sc.tag = "scale-eos";
  sc.delivery = "exactly_once";
  sc.seed = seed_or_env(2024);
  // Warm copies move with every kill, join and leave: handed over, dropped, re-opened.
  sc.standby_replicas = 1;
  if (heavy()) {
    // 1 -> 3 -> 1 hosts, 30 kills in between, over ~4.5 minutes of production.
    sc.records = 2000000;
    sc.rate = 7500;
    sc.initial_hosts = 1;
    sc.kill_restarts = 30;
    sc.joins = 2, sc.join_from = 0.05, sc.join_to = 0.3;
    sc.leaves = 2, sc.leave_from = 0.65, sc.leave_to = 0.9;
    sc.catch_up_limit = std::chrono::seconds(600);
  } else {
    sc.records = 200000;
    sc.rate = 2800;  // ~70 s of production
    sc.initial_hosts = 3;
    sc.kill_restarts = 10;
  }
  Outcome o = run_scale_out(sc);
  wait_output_settled(o.out);

  auto v = expect_dedupe_exactly_once(o.in, o.out, sc.records);
  EXPECT_LT(answer(v, "distinct_ids"), answer(v, "input"));
  expect_markers_visible(o.out);
  if (o.catch_up_s >= 0) std::printf("catch-up time: %.1f s\n", o.catch_up_s);
  // The joining host (empty state dir) restored in the background, its partitions held
  // back while the others flowed; some moves were taken over from warm copies.
  const int background = count_in_logs(o.hosts, "restoring it in the background");
  const int warm = count_in_logs(o.hosts, "(from its standby copy)");
  const int merged = count_in_logs(o.hosts, "merged claims files");
  std::printf("background restores: %d, takeovers from standby copies: %d, merges logged: %d\n",
              background, warm, merged);
  EXPECT_GT(background, 0) << "no partition was restored in the background";
  EXPECT_GT(merged, 0) << "no store merged its claims files";
  print_logs_on_failure(o);
}

TEST(ScaleOut, AtLeastOnceLosesNoIdAcrossHosts) {
  Scenario sc;
  sc.tag = "scale-alo";
  sc.delivery = "at_least_once";
  sc.seed = seed_or_env(77);
  sc.records = 60000;
  sc.rate = 2000;  // ~30 s of production
  sc.initial_hosts = 3;
  sc.kill_restarts = 3;  // + one leave + one join
  Outcome o = run_scale_out(sc);
  wait_output_settled(o.out);

  auto v = kafka_tool("verify --allow-duplicates --input-topic " + o.in + " --output-topic " + o.out +
                          " --mode dedupe --expect-input " + std::to_string(sc.records),
                      false);
  std::printf("independent reader: %s%s", v.out.c_str(), tail_of(v.err, 3000).c_str());
  EXPECT_EQ(answer(v, "missing"), 0);
  EXPECT_EQ(answer(v, "extra"), 0);
  EXPECT_EQ(answer(v, "input"), sc.records);
  expect_markers_visible(o.out);
  if (o.catch_up_s >= 0) std::printf("catch-up time: %.1f s\n", o.catch_up_s);
  print_logs_on_failure(o);
}

// ---------------------------------------------------------------- the Redis store
// The same scenarios with `dedupe-redis`: the claims live in private redis-servers
// shared by every host, so nothing is restored when a partition moves.

std::string redis_stage(const std::vector<const RedisServer*>& shards, const std::string& extra = "",
                        const std::string& window = "1h") {
  std::string list;
  for (auto* r : shards) list += (list.empty() ? "" : ", ") + r->address();
  return "      - plugin: dedupe-redis\n        config:\n"
         "          id.json: /messageId\n"
         "          shards: [" + list + "]\n"
         "          retention.max.age: " + window + "\n"
         "          redis.timeout: 2s\n" + extra;
}

long long redis_keys(const RedisServer& r) { return std::stoll(r.cli("dbsize")); }
// The keys a server holds plus those it has expired since it started: every claim made
// on it, even once a short window has passed. The reshard test's window is 40 s, and on a
// slow machine its verification took longer than that: its new shard was found empty.
long long redis_keys_made(const RedisServer& r) {
  const std::string info = r.cli("info stats");
  const auto at = info.find("expired_keys:");
  return redis_keys(r) + (at == std::string::npos ? 0 : std::stoll(info.substr(at + 13)));
}

// What the Redis scenarios share: exactly_once, `hosts` hosts, `kills` SIGKILL+restarts,
// no joins or leaves unless asked; the test sets the stage (sc.transform) and its events.
Scenario redis_scenario(const std::string& tag, uint32_t seed, long long records, long long rate,
                        int hosts, int kills, bool join_and_leave = false) {
  Scenario sc;
  sc.tag = tag;
  sc.delivery = "exactly_once";
  sc.seed = seed_or_env(seed);
  sc.records = records;
  sc.rate = rate;
  sc.initial_hosts = hosts;
  sc.kill_restarts = kills;
  if (!join_and_leave) sc.joins = 0, sc.leaves = 0;
  return sc;
}

// The dedupe crash test with the Redis store: one host, >= 10 SIGKILLs while the
// input arrives, >= 10% repeated ids; every distinct id exactly once, first payload.
// Over TLS with a client certificate (the server's tls-port only, tls-auth-clients yes):
// the plaintext store is what the other Redis scenarios use.
TEST(ScaleOut, RedisStoreCrashTestOneHostOverTls) {
  RedisServer redis("crash", "", "", "tls-clients");
  Scenario sc = redis_scenario("redis-crash", 12, 200000, 2800, 1, 10);
  const auto d = redis.tls_dir();
  const std::string tls = "          tls: true\n"
                          "          tls.ca.file: " + (d / "ca.pem").string() + "\n"
                          "          tls.cert.file: " + (d / "client.pem").string() + "\n"
                          "          tls.key.file: " + (d / "client.key").string() + "\n";
  sc.transform = [&] { return redis_stage({&redis}, tls); };
  Outcome o = run_scale_out(sc);
  wait_output_settled(o.out);
  auto v = expect_dedupe_exactly_once(o.in, o.out, sc.records);
  EXPECT_LT(answer(v, "distinct_ids") * 100, answer(v, "input") * 90) << "fewer than 10% repeats";
  expect_markers_visible(o.out);
  EXPECT_GT(redis_keys(redis), 0);
  print_logs_on_failure(o);
}

// Scale-out for free: three hosts, kills, a leave and a join, two shards.
TEST(ScaleOut, RedisStoreAcrossHostsKillsJoinsAndLeaves) {
  RedisServer a("hosts-a"), b("hosts-b");
  Scenario sc = redis_scenario("redis-hosts", 13, 200000, 2800, 3, 10, true);
  sc.transform = [&] { return redis_stage({&a, &b}); };
  Outcome o = run_scale_out(sc);
  wait_output_settled(o.out);
  expect_dedupe_exactly_once(o.in, o.out, sc.records);
  expect_markers_visible(o.out);
  EXPECT_GT(redis_keys(a), 0);
  EXPECT_GT(redis_keys(b), 0);
  print_logs_on_failure(o);
}

// Two shards -> three by editing every host's YAML while input flows (hot reload), with
// a cutover a few seconds later; kills before and after. Then the previous layout is
// retired (cutover + grace + window + span later) while input still flows.
TEST(ScaleOut, RedisStoreReshardedTwoToThreeWhileRunning) {
  RedisServer a("reshard-a"), b("reshard-b"), c("reshard-c");
  // ~100 s of input: the retirement (~60 s after the cutover) happens under input.
  Scenario sc = redis_scenario("redis-reshard", 14, 200000, 2000, 2, 6);
  // A 40 s window: repeats come from the last 8000 originals (~4 s of input), well inside.
  sc.dup_window = 8000;
  const std::string window = "40s\n          bucket.span: 10s";
  std::string stage = redis_stage({&a, &b}, "", window);
  long long cutover_ms = 0;
  sc.transform = [&] { return stage; };
  sc.custom.push_back({0.15, "RESHARD: shards [a, b] -> [a, b, c], cutover in 5 s", [&] {
                         cutover_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count() + 5000;
                         stage = redis_stage({&a, &b, &c},
                                             "          shards.previous: [" + a.address() + ", " +
                                                 b.address() + "]\n          shards.cutover: " +
                                                 std::to_string(cutover_ms) +
                                                 "\n          shards.cutover.grace: 3s\n",
                                             window);
                       },
                       true});
  Outcome o = run_scale_out(sc);
  wait_output_settled(o.out);
  expect_dedupe_exactly_once(o.in, o.out, sc.records);
  expect_markers_visible(o.out);
  std::printf("new shard: %lld keys held, %lld made\n", redis_keys(c), redis_keys_made(c));
  EXPECT_GT(redis_keys_made(c), 0) << "nothing was claimed on the new shard";
  const int reconfigured = count_in_logs(o.hosts, "dedupe-redis: reconfigured");
  const int retired = count_in_logs(o.hosts, "retired: every claim made in it has expired");
  std::printf("in-place reconfigurations: %d, retirements logged: %d\n", reconfigured, retired);
  EXPECT_GT(reconfigured, 0) << "no host changed its layout in place";
  EXPECT_GT(retired, 0) << "the previous layout was never retired";
  print_logs_on_failure(o);
}

// A Redis server killed (SIGKILL) and restarted mid-run, three times, with
// `durability: aof-always` on a server with appendfsync always: the pipelines retry
// (retriable errors, rounds replayed) and the output is still exactly once, because
// every claim a commit relied on was on disk before Redis answered.
TEST(ScaleOut, RedisStoreServerKilledAndRestartedWithAofAlways) {
  RedisServer redis("restart", "always");
  Scenario sc = redis_scenario("redis-restart", 15, 150000, 2500, 2, 2);
  sc.transform = [&] { return redis_stage({&redis}, "          durability: aof-always\n"); };
  for (double at : {0.2, 0.5, 0.8})
    sc.custom.push_back({at, "REDIS SIGKILL, restart in 2 s", [&] {
                           redis.kill9();
                           std::this_thread::sleep_for(std::chrono::seconds(2));
                           redis.start();
                         },
                         false});
  Outcome o = run_scale_out(sc);
  wait_output_settled(o.out);
  expect_dedupe_exactly_once(o.in, o.out, sc.records);
  expect_markers_visible(o.out);
  const int redis_errors = count_in_logs(o.hosts, redis.address());
  std::printf("log lines naming the Redis server: %d\n", redis_errors);
  EXPECT_GT(redis_errors, 0) << "the hosts never noticed Redis going away";
  print_logs_on_failure(o);
}

// The same Redis crash with `durability: none` on a server without persistence: the
// documented guarantee is weaker, and this shows it. Nothing is lost (rounds in flight
// are replayed), but the claims committed before the crash are gone, so repeats of
// those ids pass once more: at-least-once for them, as docs/operations.md says.
TEST(ScaleOut, RedisStoreWithoutPersistenceLosesClaimsNotRecords) {
  RedisServer redis("volatile");
  Scenario sc = redis_scenario("redis-volatile", 16, 60000, 2000, 1, 0);
  sc.transform = [&] { return redis_stage({&redis}); };
  sc.custom.push_back({0.5, "REDIS SIGKILL (no AOF, no RDB), restart in 1 s", [&] {
                         redis.kill9();
                         std::this_thread::sleep_for(std::chrono::seconds(1));
                         redis.start();
                       },
                       false});
  Outcome o = run_scale_out(sc);
  wait_output_settled(o.out);
  auto v = kafka_tool("verify --allow-duplicates --input-topic " + o.in + " --output-topic " + o.out +
                          " --mode dedupe --expect-input " + std::to_string(sc.records),
                      false);
  std::printf("independent reader: %s%s", v.out.c_str(), tail_of(v.err, 3000).c_str());
  EXPECT_EQ(answer(v, "missing"), 0);
  EXPECT_EQ(answer(v, "extra"), 0);
  EXPECT_GT(answer(v, "duplicated"), 0) << "repeats of ids claimed before the crash should pass "
                                           "again when Redis forgets its claims";
  print_logs_on_failure(o);
}

}  // namespace
