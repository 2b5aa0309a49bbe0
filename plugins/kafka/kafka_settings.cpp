#include "kafka_settings.hpp"

#include "client_files.hpp"

#include <regex.h>

#include <algorithm>

#include "topic_router.hpp"
#include "visible_text.hpp"

#include <initializer_list>

namespace exactly::kafka {

namespace {

// Settings the source's correctness depends on; the user may not change them.
void reject_forced_consumer(const std::map<std::string, std::string>& user) {
  auto expect = [&](const char* key, std::initializer_list<const char*> allowed,
                    const char* why) {
    auto it = user.find(key);
    if (it == user.end()) return;
    for (const char* a : allowed)
      if (it->second == a) return;
    throw sdk::ConfigError(std::string("rdkafka.") + key, why);
  };
  for (const char* k : {"bootstrap.servers", "group.id"}) {
    if (user.count(k) != 0)
      throw sdk::ConfigError(std::string("rdkafka.") + k, std::string("set `") + k +
                                                              "` on the source itself, not under rdkafka");
  }
  expect("isolation.level", {"read_committed"},
         "the kafka source always reads with isolation.level=read_committed");
  expect("enable.auto.commit", {"false"},
         "offsets are committed by the pipeline's commit protocol; auto commit must stay off");
  expect("enable.auto.offset.store", {"false"},
         "offsets are stored by the pipeline's commit protocol; must stay off");
  auto it = user.find("partition.assignment.strategy");
  if (it != user.end() && it->second.find("cooperative") != std::string::npos)
    throw sdk::ConfigError("rdkafka.partition.assignment.strategy",
                           "cooperative-sticky is not supported with librdkafka 2.0.2 (known "
                           "rebalance bugs); use range or roundrobin");
}

void reject_forced_producer(const std::map<std::string, std::string>& user) {
  static const std::pair<const char*, const char*> kMoved[] = {
      {"bootstrap.servers", "bootstrap.servers"},
      {"transactional.id", "transactional.id"},
      {"transaction.timeout.ms", "transaction.timeout"},
  };
  for (auto [k, instead] : kMoved)
    if (user.count(k) != 0)
      throw sdk::ConfigError(std::string("rdkafka.") + k,
                             std::string("set `") + instead + "` on the sink itself, not under rdkafka");
  auto it = user.find("enable.idempotence");
  if (it != user.end() && it->second != "true")
    throw sdk::ConfigError("rdkafka.enable.idempotence",
                           "the kafka sink always uses an idempotent producer");
}

// `priority: [high, normal, low]` instead of `topics` (kafka_source_priority.cpp).
void parse_priority(const sdk::Config& cfg, SourceSettings& s) {
  if (!cfg.has("priority")) {
    if (cfg.has("priority.min.share"))
      throw sdk::ConfigError("priority.min.share", "only applies with `priority`");
    return;
  }
  if (cfg.has("topics"))
    throw sdk::ConfigError("priority", "set either `topics` or `priority`, not both (`priority` "
                                       "lists the topics itself, highest priority first)");
  s.priority = cfg.get_list("priority");
  if (s.priority.size() < 2)
    throw sdk::ConfigError("priority", "needs at least two topics, highest priority first (for "
                                       "one topic use `topics`)");
  for (size_t i = 0; i < s.priority.size(); ++i) {
    const std::string& t = s.priority[i];
    if (t.empty()) throw sdk::ConfigError("priority", "a topic name is empty");
    require_visible_text("priority", t);
    if (t[0] == '^')
      throw sdk::ConfigError("priority", "'" + t + "': a priority level is one topic name, not a regex");
    if (std::find(s.priority.begin(), s.priority.begin() + static_cast<long>(i), t) !=
        s.priority.begin() + static_cast<long>(i))
      throw sdk::ConfigError("priority", "lists '" + t + "' twice");
  }
  s.min_share = cfg.get_double("priority.min.share", 0.05);
  const double levels_below = static_cast<double>(s.priority.size() - 1);
  if (!(s.min_share >= 0) || s.min_share * levels_below >= 1)
    throw sdk::ConfigError("priority.min.share",
                           "must be at least 0, and the levels below the first must leave it "
                           "something: (levels - 1) x share below 1");
  s.topics = s.priority;
}

}  // namespace

SourceSettings SourceSettings::parse(const sdk::Config& cfg) {
  SourceSettings s;
  s.servers = cfg.require_string("bootstrap.servers");
  s.group = cfg.require_string("group.id");
  require_visible_text("group.id", s.group);
  parse_priority(cfg, s);
  if (s.priority.empty()) {
    s.topics = cfg.get_list("topics");
    if (s.topics.empty())
      throw sdk::ConfigError("topics", "at least one topic is required (or `priority` with the "
                                       "topics by priority)");
    for (const auto& t : s.topics) {
      if (t.empty()) throw sdk::ConfigError("topics", "a topic name is empty");
      require_visible_text("topics", t);
      // A pattern librdkafka cannot compile failed only at subscribe, as "Invalid argument
      // or configuration": checked here as a POSIX extended regex, which its patterns are.
      if (t[0] == '^') {
        regex_t re;
        const int rc = regcomp(&re, t.c_str(), REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
          char why[256];
          regerror(rc, &re, why, sizeof why);
          throw sdk::ConfigError("topics", "'" + t + "' starts with ^, so it is a regular expression, "
                                           "and it is not a valid one: " + why);
        }
        regfree(&re);
      }
    }
  }
  int64_t bs = cfg.get_int("batch.size", 10000);
  if (bs < 1) throw sdk::ConfigError("batch.size", "must be at least 1");
  s.batch_size = static_cast<size_t>(bs);
  s.poll_timeout_ms = cfg.get_duration_ms("poll.timeout", 100);
  s.open_timeout_ms = cfg.get_duration_ms("open.timeout", 30000);
  if (s.poll_timeout_ms < 0) throw sdk::ConfigError("poll.timeout", "must not be negative");
  s.stop_when_idle_ms = cfg.get_duration_ms("stop.when.idle", 0);
  if (s.stop_when_idle_ms < 0) throw sdk::ConfigError("stop.when.idle", "must not be negative");
  if (s.open_timeout_ms < 0) throw sdk::ConfigError("open.timeout", "must not be negative");
  s.stall_timeout_ms = cfg.get_duration_ms("fetch.stall.timeout", 30000);
  if (s.stall_timeout_ms < 0) throw sdk::ConfigError("fetch.stall.timeout", "must not be negative");
  if (s.stall_timeout_ms > 0 && s.stall_timeout_ms < 1000)
    throw sdk::ConfigError("fetch.stall.timeout", "must be 0 (off) or at least 1s");
  s.user = cfg.get_map("rdkafka");
  reject_forced_consumer(s.user);
  check_client_files(s.user);
  int64_t replicas = cfg.get_int("standby.replicas", 0);
  if (replicas < 0 || replicas > 16) throw sdk::ConfigError("standby.replicas", "must be between 0 and 16");
  s.standby_replicas = static_cast<int>(replicas);
  if (s.standby_replicas > 0) {
    auto it = s.user.find("partition.assignment.strategy");
    if (it != s.user.end() && it->second != "range")
      throw sdk::ConfigError("rdkafka.partition.assignment.strategy",
                             "standby.replicas places warm copies where the range assignor will "
                             "move partitions; it needs partition.assignment.strategy range");
  }
  s.static_membership = cfg.get_bool("static.membership", false);
  if (s.static_membership && s.user.count("group.instance.id") != 0)
    throw sdk::ConfigError("static.membership",
                           "set either static.membership or rdkafka.group.instance.id, not both");
  s.fence_departed = cfg.get_bool("fence.departed", true);
  s.state_dir = cfg.get_string("state.dir", "./state");
  s.not_before_header = cfg.get_string("not.before.header", "");
  if (!s.not_before_header.empty()) require_visible_text("not.before.header", s.not_before_header);
  return s;
}

void apply_consumer_defaults(ConfBuilder& b, const std::map<std::string, std::string>& user,
                             const std::map<std::string, std::string>& cluster) {
  // A killed host is noticed when its session expires: 6 s is the least a broker accepts
  // at its defaults (librdkafka's own 45 s made every failover wait that long). The
  // heartbeat runs on librdkafka's thread, so a long round does not miss it; each
  // heartbeat is also when a survivor hears of the rebalance that gives it the dead
  // member's partitions, so it is frequent.
  b.set("session.timeout.ms", "6000", "rdkafka.session.timeout.ms");
  b.set("heartbeat.interval.ms", "1000", "rdkafka.heartbeat.interval.ms");
  b.set("auto.offset.reset", "earliest", "rdkafka.auto.offset.reset");
  b.set("socket.nagle.disable", "true", "rdkafka.socket.nagle.disable");
  b.set("partition.assignment.strategy", "range", "rdkafka.partition.assignment.strategy");
  b.set("enable.partition.eof", "false", "rdkafka.enable.partition.eof");
  // librdkafka 2.0.2 takes a partition whose queue reached queued.min.messages (or
  // queued.max.messages.kbytes) off the fetch list until its broker thread next wakes up,
  // up to a second later; the source's fetch wake-ups (fetch_waker.hpp) restart it. The
  // default 100000 stopped it ten times as often as this count, which lets the byte
  // bound bind first: 64 MiB for the consumer queue the partitions share (each
  // partition's fetch queue forwards to it, and 2.0.2 compares the forwarded queue's
  // size). Before the wake-ups, 100000 capped a source at ~100k records/s per partition
  // (docs/benchmarks.md, "The kafka source's consumer stalls once a second").
  b.set("queued.min.messages", "1000000", "rdkafka.queued.min.messages");
  // librdkafka keeps one fetch in flight per broker, and a fetch brings at most this much
  // of each partition: with its 1 MiB default a source that is behind reads about 1 MiB
  // per partition per broker round trip, and that round trip grows when the broker is
  // busy. 8 MiB gave 1.09x the records/s end to end (exactly_once + dedupe, and the raw
  // copy alike) with less broker CPU (docs/benchmarks.md, "Fetch size"). A partition is
  // fetched while its queue is under queued.max.messages.kbytes, so it can hold that plus
  // one fetch of this size.
  b.set("max.partition.fetch.bytes", "8388608", "rdkafka.max.partition.fetch.bytes");
  // librdkafka answers a fetch as soon as one byte is there (fetch.min.bytes 1), so a
  // source that keeps up sends a fetch per producer batch that lands: hundreds a second,
  // each a request the broker handles and a response this host parses. Waiting for 256
  // KiB or 20 ms took 29% of the broker's CPU and 11% of the pipeline's away at 150k
  // records/s (and a third off each commit's time), and adds at most 20 ms to a record
  // that arrives alone, against a commit interval of 100 ms or more (docs/benchmarks.md,
  // "End-to-end latency", 2026-11-26 evening). An idle source then asks each broker 50
  // times a second instead of twice.
  b.set("fetch.min.bytes", "262144", "rdkafka.fetch.min.bytes");
  b.set("fetch.wait.max.ms", "20", "rdkafka.fetch.wait.max.ms");
  // What the cluster needs (the embedded demo's short session) over the defaults above;
  // the user's own settings over both.
  for (const auto& [k, v] : cluster) b.set(k, v, "rdkafka." + k);
  b.apply_user(user);
}

SinkSettings SinkSettings::parse(const sdk::Config& cfg) {
  SinkSettings s;
  s.servers = cfg.require_string("bootstrap.servers");
  s.topic = cfg.get_string("topic");
  s.topic_from = cfg.get_string("topic.from");
  TopicRouter router(s.topic, s.topic_from);  // its checks only
  std::string part = cfg.get_string("partitioning", "default");
  if (part == "input") s.partitioning = Partitioning::Input;
  else if (part == "key") s.partitioning = Partitioning::Key;
  else if (part == "default") s.partitioning = Partitioning::Default;
  else throw sdk::ConfigError("partitioning", "expected input, key or default, got '" + part + "'");
  std::string delivery = cfg.get_string("delivery", "at_least_once");
  if (delivery == "exactly_once") s.eos = true;
  else if (delivery != "at_least_once")
    throw sdk::ConfigError("delivery", "expected exactly_once or at_least_once, got '" + delivery + "'");
  s.txn_timeout_ms = cfg.get_duration_ms("transaction.timeout", 10000);
  if (s.txn_timeout_ms < 1000) throw sdk::ConfigError("transaction.timeout", "must be at least 1s");
  s.open_timeout_ms = cfg.get_duration_ms("open.timeout", 30000);
  if (s.open_timeout_ms < 0) throw sdk::ConfigError("open.timeout", "must not be negative");
  s.user = cfg.get_map("rdkafka");
  reject_forced_producer(s.user);
  check_client_files(s.user);
  if (router.is_fixed()) {
    require_visible_text("topic", router.fixed_topic());
    require_legal_topic("topic", router.fixed_topic());
  }
  s.state_dir = cfg.get_string("state.dir", "./state");
  if (s.eos) {
    s.txn_id = cfg.get_string("transactional.id");
    if (!s.txn_id.empty()) require_visible_text("transactional.id", s.txn_id);
  }
  return s;
}

void apply_producer_defaults(ConfBuilder& b, const SinkSettings& s) {
  b.set("socket.nagle.disable", "true", "rdkafka.socket.nagle.disable");
  b.set("linger.ms", "10", "rdkafka.linger.ms");
  b.set("batch.num.messages", "10000", "rdkafka.batch.num.messages");
  b.set("queue.buffering.max.messages", "500000", "rdkafka.queue.buffering.max.messages");
  // Transactional requests that meet the previous transaction still completing
  // (CONCURRENT_TRANSACTIONS) are retried after this backoff; librdkafka's 100 ms default
  // made it the largest part of every commit.
  b.set("retry.backoff.ms", "20", "rdkafka.retry.backoff.ms");
  // lz4 batches: at 147k records/s with 100 ms commits the p99 end-to-end latency fell
  // in each of seven alternating pairs (median 344 -> 283 ms) for no loss of throughput;
  // the broker then writes a fraction of the bytes, and the writeback bursts of its page
  // cache, which set the worst seconds on a small machine, shrink with them
  // (docs/benchmarks.md, "Compressed output").
  b.set("compression.codec", "lz4", "rdkafka.compression.codec");
  if (s.partitioning == SinkSettings::Partitioning::Key)
    b.set("partitioner", "murmur2_random", "partitioning");
  b.apply_user(s.user);
}

// A client is made and destroyed here, with no bootstrap.servers (so it connects to
// nothing): librdkafka checks the settings together only then (an unknown sasl.mechanism,
// a CA it cannot load, settings that contradict each other), and `exactly validate` passed
// what `run` then refused at once (QA).
namespace {
void try_client(ConfBuilder& b, rd_kafka_type_t type) {
  b.set("log_level", "0", "rdkafka.log_level");  // "no bootstrap.servers" is the point here
  rd_kafka_destroy(b.create(type));
}
}  // namespace

sdk::Status validate_source(const sdk::Config& c) {
  SourceSettings s = SourceSettings::parse(c);
  ConfBuilder b;
  apply_consumer_defaults(b, without_plugin_libraries(s.user));
  try_client(b, RD_KAFKA_CONSUMER);
  return sdk::Status::ok();
}

sdk::Status validate_sink(const sdk::Config& c) {
  SinkSettings s = SinkSettings::parse(c);
  s.user = without_plugin_libraries(std::move(s.user));
  ConfBuilder b;
  apply_producer_defaults(b, s);
  try_client(b, RD_KAFKA_PRODUCER);
  return sdk::Status::ok();
}

std::map<std::string, std::string> without_plugin_libraries(std::map<std::string, std::string> user) {
  user.erase("plugin.library.paths");
  return user;
}

}  // namespace exactly::kafka
