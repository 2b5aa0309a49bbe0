#include "changelog_store.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

namespace exactly::kafka {

namespace {

struct QueueDeleter {
  void operator()(rd_kafka_queue_t* q) const {
    if (q) rd_kafka_queue_destroy(q);
  }
};
using QueuePtr = std::unique_ptr<rd_kafka_queue_t, QueueDeleter>;
struct EventDeleter {
  void operator()(rd_kafka_event_t* e) const {
    if (e) rd_kafka_event_destroy(e);
  }
};
using EventPtr = std::unique_ptr<rd_kafka_event_t, EventDeleter>;

// Waits for the admin result of `type` on `q`; a timeout or a request-level error is
// retriable (the cluster may be busy), and says what was being done.
sdk::Status admin_result(rd_kafka_queue_t* q, rd_kafka_event_type_t type, int64_t timeout_ms,
                         const std::string& what, EventPtr& out) {
  const int64_t deadline = now_ms() + timeout_ms;
  while (now_ms() < deadline) {
    EventPtr ev(rd_kafka_queue_poll(q, 200));
    if (!ev || rd_kafka_event_type(ev.get()) != type) continue;
    if (rd_kafka_event_error(ev.get()) != RD_KAFKA_RESP_ERR_NO_ERROR)
      return sdk::Status::retriable("kafka sink: " + what + ": " +
                                    rd_kafka_event_error_string(ev.get()));
    out = std::move(ev);
    return sdk::Status::ok();
  }
  return sdk::Status::retriable("kafka sink: " + what + " timed out");
}

// The first error among an admin call's per-topic results (NO_ERROR if none), `why` its
// text. `benign` (the topic already exists, or already has the partitions asked for:
// another host was first) is no error; `benign_seen` says whether it came back.
rd_kafka_resp_err_t first_topic_error(const rd_kafka_topic_result_t** res, size_t n,
                                      rd_kafka_resp_err_t benign, bool& benign_seen,
                                      std::string& why) {
  benign_seen = false;
  for (size_t i = 0; i < n; ++i) {
    const rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) continue;
    if (e == benign) {
      benign_seen = true;
      continue;
    }
    const char* text = rd_kafka_topic_result_error_string(res[i]);
    why = text ? text : rd_kafka_err2str(e);
    return e;
  }
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

// Segments roll at this size so compaction (which never touches the active segment)
// keeps the changelog near the store's retained claims.
constexpr const char* kSegmentBytes = "67108864";

// A claim chunk can only be compacted away once its claims are evicted (a tombstone), so a
// pass over young segments removes little but superseded meta records and re-copies every
// live chunk. Such passes took the broker's cleaner a core for 1-2.5 s at a time under a
// live pipeline (docs/benchmarks.md, "The changelog's compaction"). Segments younger than
// this are left alone: the meta records of 15 minutes stay (about 9,000 a partition at 10
// rounds a second), and evicted chunks stay up to 15 minutes longer.
constexpr const char* kMinCompactionLagMs = "900000";

}  // namespace

ChangelogStore::ChangelogStore(sdk::Host host, rd_kafka_t* producer, std::string connect,
                               std::string servers_display, int64_t timeout_ms,
                               std::map<std::string, std::string> connection)
    : host_(host),
      producer_(producer),
      connect_(std::move(connect)),
      display_(std::move(servers_display)),
      connection_(std::move(connection)),
      timeout_ms_(std::max<int64_t>(timeout_ms, 5000)) {}

ChangelogStore::~ChangelogStore() {
  for (rd_kafka_t* r : idle_readers_) {
    rd_kafka_assign(r, nullptr);
    rd_kafka_destroy_flags(r, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
  }
}

ChangelogStore::Reader::~Reader() {
  if (rk_ != nullptr) store_->give_back(rk_);
}

void ChangelogStore::give_back(rd_kafka_t* rk) {
  std::lock_guard<std::mutex> g(mu_);
  idle_readers_.push_back(rk);
}

void ChangelogStore::reader_log(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  auto* self = static_cast<ChangelogStore*>(rd_kafka_opaque(rk));
  if (self == nullptr) return;
  self->host_.log(librdkafka_line_level(level, fac, buf), std::string("librdkafka changelog reader ") + fac + ": " + buf);
}

rd_kafka_t* ChangelogStore::reader(std::string& error) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!idle_readers_.empty()) {
      rd_kafka_t* rk = idle_readers_.back();
      idle_readers_.pop_back();
      return rk;
    }
  }
  // A restore in a stage's own thread and the pipeline thread's reads each get a consumer.
  char err[512];
  rd_kafka_conf_t* c = rd_kafka_conf_new();
  auto set = [&](const char* k, const char* v) {
    if (rd_kafka_conf_set(c, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) error = err;
  };
  set("bootstrap.servers", connect_.c_str());
  for (const auto& [k, v] : connection_) set(k.c_str(), v.c_str());
  // No group is joined (partitions are assigned by hand); librdkafka wants an id anyway.
  set("group.id", "exactly-changelog-restore");
  set("enable.auto.commit", "false");
  set("enable.auto.offset.store", "false");
  set("isolation.level", "read_committed");
  set("enable.partition.eof", "true");
  set("auto.offset.reset", "error");
  set("socket.nagle.disable", "true");
  set("max.partition.fetch.bytes", "16777216");
  // The end of a restore is an empty fetch: don't let the broker hold it for 500 ms.
  set("fetch.wait.max.ms", "10");
  set("fetch.max.bytes", "67108864");
  set("queued.max.messages.kbytes", "262144");
  set("log.connection.close", "false");
  rd_kafka_conf_set_opaque(c, this);
  rd_kafka_conf_set_log_cb(c, &ChangelogStore::reader_log);
  // Without one librdkafka logs each error again (ERROR, after the FAIL line that said
  // it) and counts brokers it only knew by their bootstrap address as down too ("4/4
  // brokers are down" with one of three up, QA r10); a read's failure is said by its caller.
  rd_kafka_conf_set_error_cb(c, [](rd_kafka_t*, int, const char*, void*) {});
  if (!error.empty()) {
    rd_kafka_conf_destroy(c);
    return nullptr;
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof err);
  if (rk == nullptr) {
    error = err;
    return nullptr;
  }
  rd_kafka_poll_set_consumer(rk);
  return rk;
}

sdk::Status ChangelogStore::create_topic(const std::string& topic, int partitions, bool& made) {
  made = false;
  char err[512];
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(topic.c_str(), partitions, -1, err, sizeof err);
  if (nt == nullptr) return sdk::Status::fatal("kafka sink: cannot create changelog " + topic + ": " + err);
  rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
  rd_kafka_NewTopic_set_config(nt, "segment.bytes", kSegmentBytes);
  rd_kafka_NewTopic_set_config(nt, "min.compaction.lag.ms", kMinCompactionLagMs);
  QueuePtr q(rd_kafka_queue_new(producer_));
  rd_kafka_CreateTopics(producer_, &nt, 1, nullptr, q.get());
  rd_kafka_NewTopic_destroy(nt);
  EventPtr ev;
  sdk::Status st = admin_result(q.get(), RD_KAFKA_EVENT_CREATETOPICS_RESULT, timeout_ms_,
                                "creating changelog " + topic, ev);
  if (!st) return st;
  size_t n = 0;
  const rd_kafka_topic_result_t** res =
      rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev.get()), &n);
  // Another host (or stage instance) created it first: checked like any existing one.
  bool exists = false;
  std::string why;
  if (first_topic_error(res, n, RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS, exists, why) !=
      RD_KAFKA_RESP_ERR_NO_ERROR)
    return sdk::Status::config("changelog.topic", "kafka sink: cannot create changelog topic " +
                                                      topic + " on " + display_ + ": " + why);
  if (exists) return sdk::Status::ok();
  made = true;
  host_.info("kafka sink: created changelog topic " + topic + " (" + std::to_string(partitions) +
             " partitions, cleanup.policy=compact, min.compaction.lag.ms=" +
             kMinCompactionLagMs + ")");
  return sdk::Status::ok();
}

// A topic just created on a cluster of several brokers may not have its configuration on
// the broker that answers yet (the policy comes back empty): ask again for up to 5 s
// before calling it unknown.
sdk::Status ChangelogStore::check_policy(const std::string& topic) {
  const int64_t deadline = now_ms() + 5000;
  for (;;) {
    std::string policy;
    sdk::Status st = describe_policy(topic, policy);
    if (!st) return st;
    if (!policy.empty() || now_ms() >= deadline) return judge_policy(topic, policy);
    rd_kafka_poll(producer_, 200);
  }
}

sdk::Status ChangelogStore::describe_policy(const std::string& topic, std::string& policy) {
  return describe_topic_config(producer_, topic, "cleanup.policy", timeout_ms_, "describing changelog " + topic,
                               policy);
}

sdk::Status ChangelogStore::judge_policy(const std::string& topic, const std::string& policy) {
  if (policy.find("compact") == std::string::npos || policy.find("delete") != std::string::npos)
    return sdk::Status::config(
        "changelog.topic",
        "kafka sink: changelog topic " + topic + " has cleanup.policy=" +
            (policy.empty() ? std::string("(unknown)") : policy) +
            "; a changelog must be compacted and never deleted by time or size (claims "
            "would be lost). Fix: kafka-configs.sh --bootstrap-server " + connect_ +
            " --alter --entity-type topics --entity-name " + topic +
            " --add-config cleanup.policy=compact, or name another topic in changelog.topic");
  return sdk::Status::ok();
}

sdk::Status ChangelogStore::grow_topic(const std::string& topic, int from, int to,
                                       const std::string& input) {
  char err[512];
  rd_kafka_NewPartitions_t* np = rd_kafka_NewPartitions_new(topic.c_str(), static_cast<size_t>(to),
                                                            err, sizeof err);
  if (np == nullptr) return sdk::Status::fatal("kafka sink: cannot grow changelog " + topic + ": " + err);
  QueuePtr q(rd_kafka_queue_new(producer_));
  rd_kafka_CreatePartitions(producer_, &np, 1, nullptr, q.get());
  rd_kafka_NewPartitions_destroy(np);
  EventPtr ev;
  sdk::Status st = admin_result(q.get(), RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT, timeout_ms_,
                                "growing changelog " + topic, ev);
  if (!st) return st;
  size_t n = 0;
  const rd_kafka_topic_result_t** res = rd_kafka_CreatePartitions_result_topics(
      rd_kafka_event_CreatePartitions_result(ev.get()), &n);
  // Another host grew it first (the count asked for is no longer an increase).
  bool grown_elsewhere = false;
  std::string why;
  if (first_topic_error(res, n, RD_KAFKA_RESP_ERR_INVALID_PARTITIONS, grown_elsewhere, why) !=
      RD_KAFKA_RESP_ERR_NO_ERROR)
    return sdk::Status::config(
        "changelog.topic",
        "kafka sink: changelog topic " + topic + " has " + std::to_string(from) +
            " partitions, input topic " + input + " needs " + std::to_string(to) +
            ", and growing it on " + display_ + " failed: " + why +
            ". Fix: kafka-topics.sh --bootstrap-server " + connect_ + " --alter --topic " + topic +
            " --partitions " + std::to_string(to) + ", then touch the config or SIGHUP each host");
  if (grown_elsewhere) return sdk::Status::ok();
  host_.info("kafka sink: changelog topic " + topic + " grown from " + std::to_string(from) +
             " to " + std::to_string(to) + " partitions (input topic " + input + " has " +
             std::to_string(to) + ")");
  return sdk::Status::ok();
}

// Partition p of every input topic keeps its claims in partition p of the changelog (the
// keys name the input partition), so the changelog needs as many partitions as the
// largest input topic. One that has fewer (the input gained partitions, or a second
// input topic is larger) is grown: new partitions start empty, as the input partitions
// they serve have no claims yet, and the existing ones keep their place.
sdk::Status ChangelogStore::ensure_topic(const std::string& topic, const sdk::Partition& part,
                                         bool& created) {
  created = false;
  if (part.number < 0)
    return sdk::Status::fatal("kafka sink: changelog " + topic + ": input partition " + part.name +
                              " has no partition number");
  // One checker at a time (a stage's restore thread may open changelogs too).
  std::lock_guard<std::mutex> g(topics_mu_);
  auto known = partitions_.find(topic);
  if (known != partitions_.end() && part.number < known->second) return sdk::Status::ok();
  const bool policy_checked = known != partitions_.end();
  partitions_.erase(topic);
  int grown_to = 0;
  for (int attempt = 0;; ++attempt) {
    // All topics: asking for one by name would let a broker auto-create it.
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t err = rd_kafka_metadata(producer_, 1, nullptr, &md,
                                                static_cast<int>(std::min<int64_t>(timeout_ms_, 10000)));
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
      return sdk::Status::retriable("kafka sink: cannot read metadata of " + display_ + ": " +
                                    rd_kafka_err2str(err));
    int have = -1, input = -1;
    for (int i = 0; i < md->topic_cnt; ++i) {
      const auto& t = md->topics[i];
      if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
      if (topic == t.topic) have = t.partition_cnt;
      if (part.topic == t.topic) input = t.partition_cnt;
    }
    rd_kafka_metadata_destroy(md);
    const int need = std::max(input, part.number + 1);
    if (have > 0) {
      if (have < need) {
        if (grown_to >= need) {  // grown (by us or another host): wait for the metadata
          if (attempt > 50)
            return sdk::Status::retriable("kafka sink: changelog " + topic + " was grown to " +
                                          std::to_string(need) + " partitions but the metadata "
                                          "still shows " + std::to_string(have));
          rd_kafka_poll(producer_, 100);
          continue;
        }
        sdk::Status st = grow_topic(topic, have, need, part.topic);
        if (!st) return st;
        grown_to = need;
        continue;
      }
      if (!created && !policy_checked) {  // one this call created is compacted: it set the policy
        sdk::Status st = check_policy(topic);
        if (!st) return st;
      }
      partitions_.emplace(topic, have);
      return sdk::Status::ok();
    }
    if (attempt > 0 && created) {
      if (attempt > 50)
        return sdk::Status::retriable("kafka sink: changelog " + topic + " was created but does "
                                      "not show in the metadata yet");
      rd_kafka_poll(producer_, 100);
      continue;
    }
    if (input <= 0)
      return sdk::Status::config(
          "changelog.topic",
          "kafka sink: changelog topic " + topic + " does not exist, and input topic " +
              part.topic + " is not on " + display_ + " to size it. Create it with one "
              "partition per input partition and cleanup.policy=compact");
    bool made = false;
    sdk::Status st = create_topic(topic, need, made);
    if (!st) return st;
    created = made;
    if (!made) {  // another one was first: wait for it in the metadata, then check it
      rd_kafka_poll(producer_, 100);
      if (attempt > 50)
        return sdk::Status::retriable("kafka sink: changelog " + topic + " exists but does "
                                      "not show in the metadata yet");
    }
  }
}

std::string ChangelogStore::vanished_topic(int64_t timeout_ms) {
  std::vector<std::string> ours;
  {
    std::lock_guard<std::mutex> g(topics_mu_);
    for (const auto& [name, n] : partitions_) ours.push_back(name);
  }
  if (ours.empty()) return {};
  // Gone, or made again by a broker that creates topics on first use (this producer's
  // own metadata requests do that) as an ordinary topic: not compacted. Every topic is
  // listed, not the ones named, which would create it. A topic listed with an error of its
  // own (no leader while brokers bounce) still exists; a policy that cannot be read says
  // nothing. Gone twice, a second apart, before it is called gone.
  auto gone_now = [&](std::string& gone) {
    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(producer_, 1, nullptr, &md, static_cast<int>(timeout_ms)) != RD_KAFKA_RESP_ERR_NO_ERROR)
      return false;
    gone.clear();
    for (const auto& name : ours) {
      bool listed = false;
      for (int i = 0; i < md->topic_cnt && !listed; ++i)
        listed = name == md->topics[i].topic && md->topics[i].err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
      std::string policy;
      if (!listed || (describe_policy(name, policy) && !policy.empty() &&
                      policy.find("compact") == std::string::npos)) {
        gone = name;
        break;
      }
    }
    rd_kafka_metadata_destroy(md);
    return !gone.empty();
  };
  std::string first, second;
  if (!gone_now(first)) return {};
  std::this_thread::sleep_for(std::chrono::seconds(1));
  if (!gone_now(second) || second != first) return {};
  return first;
}

sdk::Status ChangelogStore::open(const std::string& topic, const sdk::Partition& part,
                                 sdk::StateInfo& info) {
  bool created = false;
  sdk::Status st = ensure_topic(topic, part, created);
  if (!st) return st;
  std::string error;
  Reader held(this, reader(error));
  rd_kafka_t* rk = held.get();
  if (rk == nullptr) return sdk::Status::fatal("kafka sink: changelog reader: " + error);
  int64_t lo = 0, hi = 0;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
  const int64_t deadline = now_ms() + timeout_ms_;
  // A topic created a moment ago (by this host or another) has no leader in a reader's
  // metadata yet: asked again after 10 ms, then less often. A flat 100 ms was a tenth of
  // a new pipeline's first second (docs/benchmarks.md, "The prefetch queue's idle second").
  int backoff_ms = 10;
  while (now_ms() < deadline) {
    err = query_watermarks(rk, topic, part.number, lo, hi, 2000);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
    // A reader learns of partitions added to a changelog (grown with its input, by this host
    // or another) only from fresh metadata: without it a restore waited out its timeout.
    //
    // And of a new leader: a reader that asked a broker that was killed (or no longer leads
    // the partition) kept asking it until open.timeout, 60 s while the new leader served,
    // inside the rebalance callback, so the whole group waited (a QA pass, 2026-12-06:
    // "Not leader for partition" after 60 s). Every failed try refreshes, a timeout too:
    // a killed leader answers nothing, and each try waits its 2 s for it (refreshing only
    // after the first quick tries still held the rebalance 14-25 s, a QA re-check).
    refresh_metadata(rk, topic, 5000);
    // Not rd_kafka_poll(rk): a reader is a consumer whose main queue is its consumer queue,
    // and one given back by read() can still hold records fetched after its end; 2.0.2
    // aborts the process when rd_kafka_poll meets one (rd_kafka_q_serve: res !=
    // RD_KAFKA_OP_RES_PASS). That happened when a broker was down during a restore.
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min(backoff_ms * 2, 100);
  }
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
    return sdk::Status::retriable("kafka sink: cannot read the range of changelog " + topic + " [" +
                                  std::to_string(part.number) + "]: " + rd_kafka_err2str(err));
  info.start = lo;
  info.end = hi;
  info.created = created;
  return sdk::Status::ok();
}

sdk::Status ChangelogStore::read(const std::string& topic, const sdk::Partition& part, int64_t from,
                                 const sdk::StateRecordFn& fn) {
  std::string error;
  Reader held(this, reader(error));
  rd_kafka_t* rk = held.get();
  if (rk == nullptr) return sdk::Status::fatal("kafka sink: changelog reader: " + error);
  // This reader may be another handle than the one open() asked with: one that has not
  // seen a grown changelog's new partitions would never fetch them.
  refresh_metadata(rk, topic, 5000);
  TplPtr list(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), part.number)->offset = from;
  rd_kafka_resp_err_t err = rd_kafka_assign(rk, list.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
    return sdk::Status::retriable(std::string("kafka sink: cannot read changelog: ") +
                                  rd_kafka_err2str(err));
  sdk::Status result;
  int64_t last_progress = now_ms();
  uint64_t records = 0;
  for (;;) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 200);
    if (m == nullptr) {
      if (now_ms() - last_progress > timeout_ms_) {
        result = sdk::Status::retriable("kafka sink: reading changelog " + topic + " [" +
                                        std::to_string(part.number) + "] made no progress for " +
                                        std::to_string(timeout_ms_) + " ms");
        break;
      }
      continue;
    }
    std::unique_ptr<rd_kafka_message_t, void (*)(rd_kafka_message_t*)> hold(m, &rd_kafka_message_destroy);
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) break;
    if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET || m->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
      result = sdk::Status::fatal("kafka sink: changelog " + topic + " [" + std::to_string(part.number) +
                                  "] has no position " + std::to_string(from) +
                                  " (truncated): " + rd_kafka_message_errstr(m));
      break;
    }
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      host_.warn(std::string("kafka sink: changelog reader: ") + rd_kafka_message_errstr(m));
      continue;
    }
    last_progress = now_ms();
    ++records;
    ex_bytes key = m->key ? ex_bytes{static_cast<const uint8_t*>(m->key), m->key_len} : sdk::null_bytes();
    ex_bytes value = m->payload ? ex_bytes{static_cast<const uint8_t*>(m->payload), m->len}
                                : sdk::null_bytes();
    if (!fn(m->offset, key, value)) {
      result = sdk::Status::fatal("kafka sink: the changelog's reader stopped at position " +
                                  std::to_string(m->offset));
      break;
    }
  }
  rd_kafka_assign(rk, nullptr);
  if (records) host_.counter("kafka_sink_changelog_records_read_total", static_cast<double>(records));
  return result;
}

void ChangelogStore::delivered(const char* topic, int32_t partition, int64_t offset) {
  int64_t& p = pending_[{topic, partition}];
  p = std::max(p, offset + 1);
}

void ChangelogStore::committed() {
  for (auto& [k, v] : pending_) committed_[k] = std::max(committed_[k], v);
  pending_.clear();
}

int64_t ChangelogStore::position(const std::string& topic, int32_t partition) const {
  auto it = committed_.find({topic, partition});
  return it == committed_.end() ? -1 : it->second;
}

bool ChangelogStore::keeps(std::string_view topic) {
  std::lock_guard<std::mutex> g(topics_mu_);
  return partitions_.count(std::string(topic)) > 0;
}

}  // namespace exactly::kafka
