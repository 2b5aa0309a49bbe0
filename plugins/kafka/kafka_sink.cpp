#include "kafka_sink.hpp"

#include "cluster_endpoint.hpp"
#include "error_text.hpp"
#include "kafka_settings.hpp"
#include "process_age.hpp"
#include "topic_limit.hpp"
#include "txn_instance_id.hpp"
#include "visible_text.hpp"

#include <algorithm>
#include <chrono>

namespace exactly::kafka {

namespace {
const char* const kPartitioning[] = {"input", "key", "default", nullptr};
const char* const kDelivery[] = {"exactly_once", "at_least_once", nullptr};
}  // namespace

const ex_config_field kSinkFields[10] = {
    sdk::required("bootstrap.servers", EX_CFG_STRING,
                  "Kafka brokers (host:port,...), or `embedded` for the in-process demo cluster"),
    sdk::field("topic", EX_CFG_STRING, "Target topic (or use topic.from)"),
    sdk::field("topic.from", EX_CFG_STRING,
               "Take each record's topic from `header:NAME` or `json:/pointer`"),
    sdk::field("partitioning", EX_CFG_STRING,
               "input: same partition number as the input record; key: murmur2 of the key "
               "(Java-compatible); default: librdkafka's partitioner",
               "default", kPartitioning),
    sdk::field("delivery", EX_CFG_STRING,
               "exactly_once: transactions carrying the source offsets; at_least_once: "
               "idempotent producer, flushed at each commit",
               "at_least_once", kDelivery),
    sdk::field("transactional.id", EX_CFG_STRING,
               "Default: exactly-<pipeline>-<instance id kept in state.dir>"),
    sdk::field("state.dir", EX_CFG_STRING, "Where the sink keeps its instance id", "./state"),
    sdk::field("rdkafka", EX_CFG_MAP, "Any librdkafka producer property, passed through"),
    sdk::field("transaction.timeout", EX_CFG_DURATION,
               "Broker-side transaction timeout (transaction.timeout.ms). A host that dies "
               "leaves its open transaction pinning read_committed readers of its output "
               "partitions until the broker aborts it after this long; a round (write to "
               "commit) must finish within it. 10s as in Kafka Streams",
               "10000"),
    sdk::field("open.timeout", EX_CFG_DURATION,
               "How long open() waits for the cluster (and init_transactions) before failing",
               "30000"),
};

namespace {

// The default id is exactly-<pipeline>-<instance id>, one per host: an ACL on the prefix
// before the instance id covers every host of the pipeline.
std::string txn_prefix_for_acl(const std::string& id) {
  const size_t dash = id.rfind('-');
  return id.starts_with("exactly-") && dash != std::string::npos && dash > 8 ? id.substr(0, dash + 1) : id;
}

bool same_offsets(const std::vector<TopicOffset>& a, const std::vector<TopicOffset>& b) {
  return a == b;
}

}  // namespace

KafkaSink::KafkaSink(sdk::Host host, const sdk::Config& cfg)
    : KafkaSink(host, SinkSettings::parse(cfg)) {}

sdk::Status KafkaSink::validate(const sdk::Config& cfg) { return validate_sink(cfg); }

KafkaSink::KafkaSink(sdk::Host host, SinkSettings s)
    : ClientContext(host), router_(s.topic, s.topic_from) {
  partitioning_ = s.partitioning == SinkSettings::Partitioning::Input ? Partitioning::Input
                  : s.partitioning == SinkSettings::Partitioning::Key ? Partitioning::Key
                                                                       : Partitioning::Default;
  eos_ = s.eos;
  txn_timeout_ms_ = s.txn_timeout_ms;
  open_timeout_ms_ = s.open_timeout_ms;
  // One blocking transactional call waits at most this long before we look again; a
  // timed-out call is resumed, so this only bounds how long we are unresponsive.
  call_timeout_ms_ = std::clamp<int64_t>(txn_timeout_ms_ / 4, 500, 15000);
  const auto& user = s.user;
  connection_ = connection_settings(user);

  bool default_txn_id = false;
  if (eos_) {
    txn_id_ = s.txn_id;
    default_txn_id = txn_id_.empty();
    if (default_txn_id) {
      txn_id_ = default_transactional_id(host_.pipeline(), txn_instance_id(s.state_dir, host_.pipeline()));
      identity_file_ = instance_id_path(s.state_dir, host_.pipeline());
    }
  }

  ConfBuilder b;
  cluster_ = resolve_cluster(s.servers);
  if (cluster_.prepare_topic && router_.is_fixed()) cluster_.prepare_topic(router_.fixed_topic());
  if (eos_ && !cluster_.transactions_caveat.empty())
    host_.warn("kafka sink: " + cluster_.transactions_caveat);
  apply_producer_defaults(b, s);
  b.set("bootstrap.servers", cluster_.bootstrap, "bootstrap.servers");
  b.set("enable.idempotence", "true", "rdkafka.enable.idempotence");
  if (eos_) {
    b.set("transactional.id", txn_id_, "transactional.id");
    b.set("transaction.timeout.ms", std::to_string(txn_timeout_ms_), "transaction.timeout");
  }
  // Other hosts of this pipeline use the same default id form; a transactional.id set by
  // hand is the user's to manage, and a cluster without faithful transactions has nothing
  // to fence.
  if (default_txn_id && cluster_.transactions_caveat.empty()) {
    std::map<std::string, std::string> fence_conf = user;
    fence_conf["bootstrap.servers"] = cluster_.bootstrap;
    fence_conf.erase("transactional.id");
    fencer_ = std::make_unique<TxnFencer>(std::move(fence_conf), txn_id_, 30000);
    departed_ = std::make_unique<departed::Subscription>(
        host_.pipeline(), txn_id_, [f = fencer_.get()](const std::string& id) { f->fence(id); });
  }
  max_message_bytes_ = b.get("message.max.bytes");
  batch_bytes_ = std::atoll(b.get("batch.size").c_str());
  b.route_callbacks(static_cast<ClientContext*>(this));
  rd_kafka_conf_set_dr_msg_cb(b.raw(), &KafkaSink::dr_cb);
  // Kept to make the producer again with batches the output topic takes (open()).
  conf_template_ = rd_kafka_conf_dup(b.raw());
  rk_ = b.create(RD_KAFKA_PRODUCER);
  // librdkafka may have adjusted it (it caps message.timeout.ms to the txn timeout).
  {
    char buf[64];
    size_t n = sizeof(buf);
    rd_kafka_topic_conf_t* tc = rd_kafka_default_topic_conf_dup(rk_);
    if (tc != nullptr) {
      if (rd_kafka_topic_conf_get(tc, "message.timeout.ms", buf, &n) == RD_KAFKA_CONF_OK)
        message_timeout_ms_ = std::max<int64_t>(1000, std::atoll(buf));
      rd_kafka_topic_conf_destroy(tc);
    }
  }
}

KafkaSink::~KafkaSink() {
  departed_.reset();
  fencer_.reset();
  changelog_.reset();
  // Bounded on every path: a dead broker must not keep the host from shutting down.
  if (eos_ && txn_open_ && !broken_ && !fatal()) {
    ErrorPtr e(rd_kafka_abort_transaction(rk_, 5000));
    if (e) host_.warn("kafka sink: abort on close: " + describe(e.get()));
  } else if (!eos_ && opened_) {
    if (rd_kafka_flush(rk_, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
      host_.warn("kafka sink: " + std::to_string(rd_kafka_outq_len(rk_)) +
                 " records undelivered at close (the round was not committed; it is replayed)");
  }
  for (auto& [name, rkt] : topics_) rd_kafka_topic_destroy(rkt);
  topics_.clear();
  for (auto& [name, rkt] : routed_) rd_kafka_topic_destroy(rkt);
  routed_.clear();
  rd_kafka_destroy(rk_);
  if (conf_template_ != nullptr) rd_kafka_conf_destroy(conf_template_);
}

sdk::Status KafkaSink::fit_topic_limit(const std::string& topic) {
  const int64_t limit = topic_max_message_bytes(rk_, topic, std::min<int64_t>(open_timeout_ms_, 10000));
  if (limit <= 0 || conf_template_ == nullptr) return sdk::Status::ok();
  const int64_t record_max = std::atoll(max_message_bytes_.c_str());
  const int64_t batch = std::min(batch_bytes_, batch_bytes_for(limit));
  const int64_t record = std::min(record_max, record_bytes_for(limit));
  if (batch == batch_bytes_ && record == record_max) return sdk::Status::ok();
  rd_kafka_conf_t* c = rd_kafka_conf_dup(conf_template_);
  char err[512];
  rd_kafka_t* fresh = nullptr;
  if (rd_kafka_conf_set(c, "message.max.bytes", std::to_string(record).c_str(), err, sizeof err) !=
          RD_KAFKA_CONF_OK ||
      rd_kafka_conf_set(c, "batch.size", std::to_string(batch).c_str(), err, sizeof err) != RD_KAFKA_CONF_OK ||
      (fresh = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err)) == nullptr) {
    rd_kafka_conf_destroy(c);  // rd_kafka_new owns it only when it succeeds
    return sdk::Status::config("topic", "kafka sink: topic " + topic + " takes batches of at most " +
                                            std::to_string(limit) + " bytes (max.message.bytes): " + err);
  }
  rd_kafka_destroy(rk_);  // nothing was produced with it yet
  rk_ = fresh;
  batch_bytes_ = batch;
  max_message_bytes_ = std::to_string(record);
  host_.info("kafka sink: topic " + topic + " takes record batches of at most " + std::to_string(limit) +
             " bytes (its max.message.bytes): batches of at most " + std::to_string(batch) +
             " bytes (batch.size), records of at most " + std::to_string(record) +
             " (message.max.bytes); a larger record goes to the error policy");
  return sdk::Status::ok();
}

void KafkaSink::dr_cb(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* self = static_cast<KafkaSink*>(static_cast<ClientContext*>(opaque));
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (self->changelog_ && m->_private == self->changelog_->marker())
      self->changelog_->delivered(rd_kafka_topic_name(m->rkt), m->partition, m->offset);
    return;
  }
  // Purged by our own abort: not a delivery failure of a round that is still live.
  if (m->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || m->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
    return;
  // A routed topic deleted while the sink ran (librdkafka fails its records as of an
  // unknown partition or topic): its handle is forgotten before the next write, so that
  // the replay asks the cluster again (routed_handle) and rejects its records the way it
  // rejects a topic that never existed.
  if ((m->err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION || m->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
       m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) && m->rkt != nullptr) {
    const char* name = rd_kafka_topic_name(m->rkt);
    if (self->routed_.count(std::string_view(name)) != 0 &&
        std::find(self->vanished_.begin(), self->vanished_.end(), name) == self->vanished_.end())
      self->vanished_.emplace_back(name);
  }
  // A record the topic's rules refuse (topic_rules.hpp) that the sink let through: they
  // changed since it read them.
  if (m->err == RD_KAFKA_RESP_ERR_INVALID_RECORD || m->err == RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP)
    self->rules_stale_ = true;
  if (m->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED && m->rkt != nullptr)
    note_once(self->dr_denied_, rd_kafka_topic_name(m->rkt));
  if (self->dr_failed_++ == 0) {
    self->dr_first_error_ = std::string(m->rkt ? rd_kafka_topic_name(m->rkt) : "?") + " [" +
                            std::to_string(m->partition) + "]: " + rd_kafka_err2str(m->err);
  }
}

sdk::Status KafkaSink::fatal_status(const std::string& what) {
  broken_ = true;
  std::string reason = fatal_reason(rk_);
  std::string hint;
  const rd_kafka_resp_err_t err = rd_kafka_fatal_error(rk_, nullptr, 0);
  // Fenced: a newer producer with our transactional.id took over. Usually the group's
  // other hosts fencing this host's previous run after a quick restart (fence.departed),
  // or a restart of this very pipeline elsewhere (fine either way: this instance is rebuilt
  // and takes the id back); if it repeats, two live hosts share one id, which only a
  // copied state.dir (a cloned VM, a restored backup) does, as a second process on one
  // state.dir is refused by its lock. fenced_hint() words it by the process's age.
  if (err == RD_KAFKA_RESP_ERR__FENCED || err == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
      err == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH) {
    // The coordinator also bumps the epoch of a transaction it aborts for outliving
    // transaction.timeout (a broker outage stalled the round: QA); that is no other producer.
    const int64_t open_ms = txn_open_ ? now_ms() - txn_began_ms_ : 0;
    hint = open_ms > txn_timeout_ms_ ? timed_out_transaction_hint(open_ms, txn_timeout_ms_)
                                     : fenced_hint(txn_id_, identity_file_, process_age_seconds());
  }
  return sdk::Status::fatal(fit_error("kafka sink: " + with_reason(what, reason), hint, EX_ERROR_MESSAGE_MAX));
}

sdk::Status KafkaSink::open(std::optional<sdk::Checkpoint>& stored) {
  // Positions committed in a transaction live in the consumer group itself; the source
  // reads them back from there.
  stored.reset();
  std::vector<std::string> topics;
  if (router_.is_fixed()) topics.push_back(router_.fixed_topic());
  sdk::Status st = check_cluster(rk_, cluster_.display, open_timeout_ms_,
                                 topics, "topic", this);
  if (!st) return st;
  if (router_.is_fixed() && fixed_rkt_ == nullptr && cluster_.changelog_caveat.empty()) {
    st = fit_topic_limit(router_.fixed_topic());
    if (!st) return st;
  }
  // Only now: a topic handle makes the producer ask for the topic's metadata, which lets
  // a broker with auto.create.topics.enable create a topic the check should reject.
  if (router_.is_fixed() && fixed_rkt_ == nullptr) fixed_rkt_ = topic_handle(router_.fixed_topic());
  if (eos_) {
    const int64_t deadline = now_ms() + std::max<int64_t>(open_timeout_ms_, call_timeout_ms_);
    for (;;) {
      ErrorPtr e(rd_kafka_init_transactions(rk_, static_cast<int>(call_timeout_ms_)));
      rd_kafka_poll(rk_, 0);
      if (!e) break;
      // The broker's limit, not a fault that passes: restarting would meet it again.
      if (rd_kafka_error_code(e.get()) == RD_KAFKA_RESP_ERR_INVALID_TRANSACTION_TIMEOUT)
        return sdk::Status::config(
            "transaction.timeout",
            "kafka sink: " + cluster_.display + " refuses transaction.timeout=" + std::to_string(txn_timeout_ms_) +
                " ms: it is longer than the brokers' transaction.max.timeout.ms (15 minutes unless "
                "set otherwise): lower transaction.timeout, or raise the brokers' limit");
      // An ACL: restarting meets it again (it restarted for ever).
      if (rd_kafka_error_code(e.get()) == RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return sdk::Status::config(
            "transactional.id",
            "kafka sink: " + cluster_.display + " does not let this producer use transactional id " + txn_id_ +
                " (TRANSACTIONAL_ID_AUTHORIZATION_FAILED: an ACL); exactly_once needs WRITE and DESCRIBE on it. Fix: " +
                acl_command(connection_, "--operation Write --operation Describe",
                            "--transactional-id " + txn_prefix_for_acl(txn_id_) + " --resource-pattern-type prefixed"));
      if (rd_kafka_error_is_fatal(e.get()))
        return fatal_status("init_transactions failed: " + describe(e.get()));
      if (rd_kafka_error_is_retriable(e.get())) {
        if (host_.stopping())
          return sdk::Status::retriable("stopped during init_transactions with " + cluster_.display);
        if (now_ms() < deadline) continue;  // resumes the same initialisation
        // A cluster that answers a metadata request is reachable: what did not answer is
        // the transaction coordinator (QA r10: "cannot reach" while two of three brokers
        // were down and the third served this host's consumers).
        const rd_kafka_metadata_t* md = nullptr;
        const bool answers = rd_kafka_metadata(rk_, 0, nullptr, &md, 2000) == RD_KAFKA_RESP_ERR_NO_ERROR &&
                             md != nullptr && md->broker_cnt > 0;
        if (md != nullptr) rd_kafka_metadata_destroy(md);
        if (answers)
          return sdk::Status::retriable(
              "the transaction coordinator of " + cluster_.display + " did not answer init_transactions for "
              "transactional.id " + txn_id_ + " (" + describe(e.get()) + "), though the cluster answers: a "
              "broker leading a partition of __transaction_state is down, or that partition has fewer "
              "in-sync replicas than min.insync.replicas; retried");
        return sdk::Status::retriable("cannot reach " + cluster_.display +
                                      ": init_transactions: " + describe(e.get()));
      }
      return fatal_status("init_transactions failed: " + describe(e.get()));
    }
    host_.info("kafka sink: transactional producer ready (transactional.id=" + txn_id_ + ")");
  }
  // A cluster without an admin API (the embedded demo cluster) keeps no changelogs.
  if (cluster_.changelog_caveat.empty() && !changelog_)
    changelog_ = std::make_unique<ChangelogStore>(host_, rk_, cluster_.bootstrap,
                                                  cluster_.display,
                                                  open_timeout_ms_, connection_);
  opened_ = true;
  return sdk::Status::ok();
}

sdk::Status KafkaSink::assign(const std::vector<sdk::Partition>& parts) {
  for (const auto& p : parts) {
    if (p.id < 0) continue;
    if (number_of_id_.size() <= static_cast<size_t>(p.id))
      number_of_id_.resize(static_cast<size_t>(p.id) + 1, -1);
    number_of_id_[static_cast<size_t>(p.id)] = p.number;
  }
  return sdk::Status::ok();
}

sdk::Status KafkaSink::begin_if_needed() {
  if (txn_open_) return sdk::Status::ok();
  ErrorPtr e(rd_kafka_begin_transaction(rk_));
  if (e) return fatal_status("begin_transaction failed: " + describe(e.get()));
  txn_open_ = true;
  txn_began_ms_ = now_ms();
  return sdk::Status::ok();
}

sdk::Status KafkaSink::write(const sdk::Batch& in, const sdk::RecordErrors& errors) {
  if (broken_) return fatal_status("the producer failed earlier; it is rebuilt");
  if (!opened_) return sdk::Status::fatal("kafka sink: write before open");
  if (eos_ && !in.empty()) {
    sdk::Status st = begin_if_needed();
    if (!st) return st;
  }
  if (!vanished_.empty()) forget_vanished_topics();
  rd_kafka_poll(rk_, 0);  // the log lines and reports of a round that failed
  sdk::Status denied = note_denied_topics();
  if (!denied) return denied;
  if (rules_stale_) {
    rules_.clear();
    rules_stale_ = false;
  }
  // Looked up once per batch for the fixed topic, per record for routed ones.
  const TopicRules* fixed_rules = fixed_rkt_ != nullptr ? &rules_for(router_.fixed_topic()) : nullptr;
  const int64_t wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  std::string reason;
  size_t produced = 0, rejected = 0;
  const int64_t full_deadline = now_ms() + std::max<int64_t>(message_timeout_ms_, 30000);
  for (size_t i = 0; i < in.size(); ++i) {
    const ex_record& r = in[i];
    std::string_view topic;
    if (!router_.route(r, topic, reason)) {
      errors.reject(i, "kafka sink: " + reason);
      ++rejected;
      continue;
    }
    rd_kafka_topic_t* rkt = fixed_rkt_ != nullptr ? fixed_rkt_ : routed_handle(topic, reason);
    if (rkt == nullptr) {
      errors.reject(i, reason);
      ++rejected;
      continue;
    }
    const TopicRules& rules = fixed_rules != nullptr ? *fixed_rules : rules_for(topic);
    if (rules.any()) {
      std::string why = rules.refusal(r, wall_ms, topic);
      if (!why.empty()) {
        errors.reject(i, why);
        ++rejected;
        continue;
      }
    }
    int32_t partition = RD_KAFKA_PARTITION_UA;
    if (partitioning_ == Partitioning::Input) {
      if (r.partition < 0 || static_cast<size_t>(r.partition) >= number_of_id_.size() ||
          number_of_id_[static_cast<size_t>(r.partition)] < 0) {
        errors.reject(i, "kafka sink: input partition id " + std::to_string(r.partition) +
                             " was never assigned to the sink (partitioning: input)");
        ++rejected;
        continue;
      }
      partition = number_of_id_[static_cast<size_t>(r.partition)];
    }
    rd_kafka_headers_t* hdrs = nullptr;
    if (r.header_count > 0) {
      hdrs = rd_kafka_headers_new(r.header_count);
      for (uint32_t h = 0; h < r.header_count; ++h)
        rd_kafka_header_add(hdrs, reinterpret_cast<const char*>(r.headers[h].key.ptr),
                            static_cast<ssize_t>(r.headers[h].key.len), r.headers[h].value.ptr,
                            static_cast<ssize_t>(r.headers[h].value.len));
    }
    rd_kafka_vu_t vu[7];
    size_t k = 0;
    vu[k].vtype = RD_KAFKA_VTYPE_RKT;
    vu[k++].u.rkt = rkt;
    vu[k].vtype = RD_KAFKA_VTYPE_PARTITION;
    vu[k++].u.i32 = partition;
    vu[k].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vu[k++].u.i = RD_KAFKA_MSG_F_COPY;
    vu[k].vtype = RD_KAFKA_VTYPE_VALUE;
    vu[k].u.mem.ptr = const_cast<uint8_t*>(r.value.ptr);
    vu[k++].u.mem.size = r.value.ptr ? r.value.len : 0;
    vu[k].vtype = RD_KAFKA_VTYPE_KEY;
    vu[k].u.mem.ptr = const_cast<uint8_t*>(r.key.ptr);
    vu[k++].u.mem.size = r.key.ptr ? r.key.len : 0;
    if (hdrs != nullptr) {
      vu[k].vtype = RD_KAFKA_VTYPE_HEADERS;
      vu[k++].u.headers = hdrs;
    }
    if (r.timestamp_ms >= 0) {
      vu[k].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
      vu[k++].u.i64 = r.timestamp_ms;
    }
    for (;;) {
      ErrorPtr e(rd_kafka_produceva(rk_, vu, k));
      if (!e) {
        ++produced;
        break;
      }
      rd_kafka_resp_err_t code = rd_kafka_error_code(e.get());
      if (code == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        // Back-pressure: serve delivery reports until there is room. Queued messages
        // time out after message.timeout.ms at the latest, so this ends.
        rd_kafka_poll(rk_, 10);
        if (fatal()) break;
        if (now_ms() < full_deadline) continue;
        if (hdrs) rd_kafka_headers_destroy(hdrs);
        return sdk::Status::retriable("kafka sink: producer queue stayed full");
      }
      if (hdrs) rd_kafka_headers_destroy(hdrs);  // not taken over on failure
      // After a fatal error librdkafka refuses every produce with that error's own code
      // (e.g. _FENCED), before our error callback has latched it: ask the handle.
      if (code == RD_KAFKA_RESP_ERR__FATAL || fatal() || rd_kafka_error_is_fatal(e.get()) ||
          rd_kafka_fatal_error(rk_, nullptr, 0) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return fatal_status("produce failed: " + describe(e.get()));
      if (code == RD_KAFKA_RESP_ERR__STATE && eos_)
        return abort_transaction("kafka sink: the transaction failed and must abort: " +
                                 describe(e.get()));
      // partitioning: input into a topic with fewer partitions than the input: a topology
      // mistake, not a bad record. As a record error (skip, dead-letter) every record of
      // the higher input partitions went to the error policy, their ids already claimed.
      if (partitioning_ == Partitioning::Input && code == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION) {
        return sdk::Status::config(
            "partitioning",
            "kafka sink: partitioning: input sends input partition " + std::to_string(partition) +
                " to partition " + std::to_string(partition) + " of " + std::string(topic) + ", which has " +
                partition_count_text(std::string(topic)) +
                ": give the output topic at least as many partitions as the input, or use "
                "partitioning: key");
      }
      if (code == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) {
        // Headers count too: a dead letter of 153 bytes with a 5 MB exactly.error header
        // was reported as "record of 153 bytes ... larger than 1000000" (QA).
        size_t header_bytes = 0;
        for (uint32_t h = 0; h < r.header_count; ++h) header_bytes += r.headers[h].key.len + r.headers[h].value.len;
        errors.reject(i, "kafka sink: record of " + std::to_string(r.value.len + r.key.len) +
                             " bytes (key and value)" +
                             (header_bytes ? " and " + std::to_string(header_bytes) + " bytes of headers" : "") +
                             " with its framing is larger than message.max.bytes=" + max_message_bytes_ +
                             " (librdkafka's, or made to fit topic " + std::string(topic) + "'s max.message.bytes)");
      }
      else if (!router_.is_fixed() && (code == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
                                       code == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART))
        errors.reject(i, refuse_unknown_routed(topic));
      else if (code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
        // Known from the topic's metadata (no DESCRIBE either): the sink's own topic is
        // the configuration's problem, not each record's.
        if (router_.is_fixed()) return denied_config("topic", std::string(topic));
        dr_denied_.emplace_back(topic);
        sdk::Status st = note_denied_topics();
        if (!st) return st;
        errors.reject(i, denied_reason(topic));
      }
      else
        errors.reject(i, "kafka sink: cannot produce to " + std::string(topic) + ": " +
                             rd_kafka_error_string(e.get()));
      ++rejected;
      break;
    }
    if (fatal()) return fatal_status("producer failed");
  }
  rd_kafka_poll(rk_, 0);  // delivery reports
  if (produced) host_.counter("kafka_sink_records_total", static_cast<double>(produced));
  if (rejected) host_.counter("kafka_sink_records_rejected_total", static_cast<double>(rejected));
  return sdk::Status::ok();
}

sdk::Status KafkaSink::flush_all() {
  // Bounded so a dead cluster cannot hold the host inside a commit for the whole
  // message.timeout.ms; records still in flight after that may arrive twice once the
  // round is replayed, which at_least_once allows.
  const int64_t deadline = now_ms() + std::min<int64_t>(message_timeout_ms_ + 5000, 60000);
  while (rd_kafka_outq_len(rk_) > 0) {
    rd_kafka_flush(rk_, 500);
    if (fatal()) return fatal_status("producer failed while flushing");
    if (now_ms() > deadline)
      return sdk::Status::retriable("kafka sink: " + std::to_string(rd_kafka_outq_len(rk_)) +
                                    " records still undelivered");
  }
  return sdk::Status::ok();
}

sdk::Status KafkaSink::take_delivery_failures() {
  if (dr_failed_ == 0) return sdk::Status::ok();
  host_.counter("kafka_sink_delivery_failures_total", static_cast<double>(dr_failed_));
  std::string msg = "kafka sink: " + std::to_string(dr_failed_) +
                    " records failed delivery (first: " + dr_first_error_ + ")";
  dr_failed_ = 0;
  dr_first_error_.clear();
  return sdk::Status::retriable(msg);
}

void KafkaSink::log_fence_reports() {
  if (!fencer_) return;
  for (const auto& line : fencer_->take_reports()) {
    if (line.rfind("fenced", 0) == 0) {
      host_.info("kafka sink: a member of the group left (closed, or killed without closing); " + line);
      host_.counter("kafka_sink_departed_fenced_total", 1);
    } else {
      host_.warn("kafka sink: a member of the group left (closed, or killed without closing); " + line);
    }
  }
}

sdk::Status KafkaSink::prepare_commit() {
  if (broken_) return fatal_status("the producer failed earlier; it is rebuilt");
  log_fence_reports();
  if (eos_) return sdk::Status::ok();  // commit_transaction flushes
  sdk::Status st = flush_all();
  if (st) st = take_delivery_failures();
  if (!st) return st;
  // Only once the round's output is delivered, its changelog records (state_write kept
  // them): without a transaction nothing orders the two, and a changelog whose meta
  // said "output up to offset N" while the host died with part of that output undelivered
  // made the partition's next owner drop the replay of it as duplicates (CI: 42 ids lost
  // across a kill in ScaleOut.AtLeastOnceLosesNoIdAcrossHosts).
  if (pending_state_.empty()) return st;
  auto pending = std::move(pending_state_);
  pending_state_.clear();
  for (const auto& r : pending) {
    st = produce_state(r.topic, r.partition, sdk::bytes(r.key), r.value ? sdk::bytes(*r.value) : sdk::null_bytes());
    if (!st) return st;
  }
  st = flush_all();
  if (st) st = take_delivery_failures();
  return st;
}

sdk::Status KafkaSink::commit(const sdk::Checkpoint* positions, bool& stored_positions) {
  stored_positions = false;
  if (broken_) return fatal_status("the producer failed earlier; it is rebuilt");
  rd_kafka_poll(rk_, 0);  // an idle sink still has logs and reports to serve
  if (!eos_) {
    // The host commits the source's offsets after this returns ok.
    sdk::Status st = flush_all();
    if (st) st = take_delivery_failures();
    if (st && changelog_) changelog_->committed();
    return changelog_gone(st);
  }
  return changelog_gone(commit_transactional(positions, stored_positions));
}

sdk::Status KafkaSink::changelog_gone(sdk::Status st) {
  if (st || !changelog_ || st.code() == EX_ERR_CONFIG) return st;
  const std::string gone = changelog_->vanished_topic(5000);
  if (gone.empty()) return st;
  // Not retriable: every round writes claims to it, and each one failed at its commit
  // after message.timeout (an abort loop that named only a timeout).
  return sdk::Status::config(
      "changelog.topic",
      "kafka sink: changelog topic " + gone + " no longer exists: it was deleted while the pipeline ran "
      "(and, on a broker that creates topics on first use, made again as an ordinary topic, not "
      "compacted), and no round that writes to it can commit (" + st.message() + "). The dedupe stores "
      "of the hosts still hold their claims. Fix: delete what is there now and create it again "
      "(kafka-topics.sh --bootstrap-server " + cluster_.bootstrap + " --create --topic " + gone +
          " --config cleanup.policy=compact --partitions <as many as the input>) and start the pipeline "
          "again; a store ahead of the new changelog is refused until on.store.behind: ignore lets the "
          "stage keep it (plugins/dedupe/README.md)");
}

sdk::Status KafkaSink::txn_failure(const char* op, const rd_kafka_error_t* e) {
  std::string what = std::string(op) + ": " + describe(e);
  // A transaction learns of a refused batch as its own error (no delivery report says it).
  const rd_kafka_resp_err_t code = rd_kafka_error_code(e);
  if (code == RD_KAFKA_RESP_ERR_INVALID_RECORD || code == RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP)
    rules_stale_ = true;
  if (rd_kafka_error_is_fatal(e) || fatal()) return fatal_status(what);
  if (rd_kafka_error_txn_requires_abort(e)) return abort_transaction("kafka sink: " + what);
  if (rd_kafka_error_is_retriable(e)) return sdk::Status::retriable("kafka sink: " + what);
  return fatal_status(what);
}

sdk::Status KafkaSink::commit_transactional(const sdk::Checkpoint* positions, bool& stored) {
  std::optional<KafkaCheckpoint> cp;
  if (positions != nullptr && !(positions->format.empty() && positions->data.empty())) {
    if (positions->format != kCheckpointFormat) {
      // A pipeline wiring problem, not a producer failure: leave the producer clean.
      abort_transaction({});
      // A config error, so the host stops the pipeline instead of rebuilding it forever.
      return sdk::Status::config("delivery",
                                 "kafka sink: exactly_once with the kafka sink needs a kafka "
                                 "source (got positions in format '" + positions->format +
                                     "'); use delivery: at_least_once");
    }
    cp = decode_checkpoint(positions->data);
    if (!cp) return fatal_status("corrupt kafka.v1 positions");
  }
  if (cp && !cp->offsets.empty() && !(txn_open_ == false && same_offsets(cp->offsets, last_offsets_))) {
    sdk::Status st = begin_if_needed();
    if (!st) return st;
    GroupMetadataPtr md;
    {
      rd_kafka_consumer_group_metadata_t* raw = nullptr;
      ErrorPtr e(rd_kafka_consumer_group_metadata_read(&raw, cp->group_metadata.data(),
                                                       cp->group_metadata.size()));
      if (e) return fatal_status("cannot read consumer group metadata: " + describe(e.get()));
      md.reset(raw);
    }
    TplPtr offsets(rd_kafka_topic_partition_list_new(static_cast<int>(cp->offsets.size())));
    for (const auto& o : cp->offsets)
      rd_kafka_topic_partition_list_add(offsets.get(), o.topic.c_str(), o.partition)->offset = o.offset;
    for (int attempt = 0;; ++attempt) {
      ErrorPtr e(rd_kafka_send_offsets_to_transaction(rk_, offsets.get(), md.get(),
                                                      static_cast<int>(call_timeout_ms_)));
      if (!e) break;
      // Unlike the other transactional calls this one cannot be resumed after a timeout
      // in 2.0.2: the transaction has to go.
      bool timed_out = rd_kafka_error_code(e.get()) == RD_KAFKA_RESP_ERR__TIMED_OUT;
      if (rd_kafka_error_is_fatal(e.get()) || fatal())
        return fatal_status("send_offsets_to_transaction: " + describe(e.get()));
      if (rd_kafka_error_is_retriable(e.get()) && !timed_out && attempt < 3) continue;
      return abort_transaction("kafka sink: send_offsets_to_transaction: " + describe(e.get()));
    }
  }
  if (!txn_open_) {
    stored = cp.has_value();
    return sdk::Status::ok();
  }
  const int64_t deadline = now_ms() + 2 * txn_timeout_ms_;
  for (;;) {
    ErrorPtr e(rd_kafka_commit_transaction(rk_, static_cast<int>(call_timeout_ms_)));
    if (!e) break;
    if (rd_kafka_error_is_fatal(e.get()) || fatal() || rd_kafka_error_txn_requires_abort(e.get()))
      return txn_failure("commit_transaction", e.get());
    if (rd_kafka_error_is_retriable(e.get())) {
      // It may already be committed on the broker: resume, never abort-and-replay.
      host_.counter("kafka_sink_commit_resumed_total", 1);
      host_.info("kafka sink: commit_transaction not finished yet (" + describe(e.get()) +
                 "); resuming");
      if (now_ms() < deadline) continue;
      // Still unknown: only a new producer (init_transactions) settles it either way,
      // and the source must then re-read the committed offsets.
      return fatal_status("commit_transaction did not complete within " +
                          std::to_string(2 * txn_timeout_ms_) + " ms: " + describe(e.get()));
    }
    return fatal_status("commit_transaction: " + describe(e.get()));
  }
  txn_open_ = false;
  dr_failed_ = 0;
  dr_first_error_.clear();
  if (changelog_) changelog_->committed();
  if (cp) last_offsets_ = cp->offsets;
  host_.counter("kafka_sink_transactions_committed_total", 1);
  stored = cp.has_value();
  return sdk::Status::ok();
}

sdk::Status KafkaSink::abort_transaction(const std::string& cause) {
  if (txn_open_) {
    const int64_t deadline = now_ms() + std::max<int64_t>(txn_timeout_ms_, 10000);
    for (;;) {
      ErrorPtr e(rd_kafka_abort_transaction(rk_, static_cast<int>(call_timeout_ms_)));
      if (!e) break;
      if (rd_kafka_error_is_fatal(e.get()) || fatal())
        return fatal_status("abort_transaction: " + describe(e.get()));
      if (rd_kafka_error_is_retriable(e.get()) && now_ms() < deadline) continue;
      // Retried until the deadline: librdkafka's "(retriable)" in the text would read as
      // a contradiction of the fatal status; the producer is rebuilt instead.
      return fatal_status("abort_transaction did not succeed within " +
                          std::to_string(std::max<int64_t>(txn_timeout_ms_, 10000)) +
                          " ms of retries, so the producer is rebuilt: " + describe(e.get()));
    }
    txn_open_ = false;
    host_.counter("kafka_sink_transactions_aborted_total", 1);
  }
  if (changelog_) changelog_->aborted();
  dr_failed_ = 0;
  dr_first_error_.clear();
  if (cause.empty()) return sdk::Status::ok();
  host_.warn(cause + "; transaction aborted");
  return sdk::Status::abortable(cause);
}

sdk::Status KafkaSink::abort() {
  if (broken_) return sdk::Status::ok();  // the instance is being rebuilt anyway
  if (eos_) return abort_transaction({});
  // Records still queued would only become duplicates of the replay; the round's
  // changelog records were not sent yet (prepare_commit sends them after the output).
  pending_state_.clear();
  rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE);
  // Let in-flight ones settle so their reports are not charged to the next round.
  rd_kafka_flush(rk_, static_cast<int>(call_timeout_ms_));
  if (changelog_) changelog_->aborted();
  dr_failed_ = 0;
  dr_first_error_.clear();
  return sdk::Status::ok();
}

}  // namespace exactly::kafka

namespace exactly::kafka {

sdk::Status KafkaSink::revoke(const std::vector<sdk::Partition>& parts) {
  // A partition that comes back later must not report a position from before it left.
  if (changelog_)
    for (const auto& p : parts) changelog_->forget(p.number);
  return sdk::Status::ok();
}

sdk::Status KafkaSink::state_open(const std::string& store, const sdk::Partition& part,
                                  sdk::StateInfo& info) {
  if (!changelog_)
    return sdk::Status::unsupported(cluster_.changelog_caveat.empty() ? "kafka sink not open"
                                                                      : cluster_.changelog_caveat);
  return changelog_->open(store, part, info);
}

sdk::Status KafkaSink::state_read(const std::string& store, const sdk::Partition& part,
                                  int64_t from, const sdk::StateRecordFn& fn) {
  if (!changelog_) return sdk::Status::unsupported("no changelogs");
  return changelog_->read(store, part, from, fn);
}

sdk::Status KafkaSink::state_write(const std::string& store, const sdk::Partition& part,
                                   ex_bytes key, ex_bytes value) {
  if (!changelog_) return sdk::Status::unsupported("no changelogs");
  if (broken_) return fatal_status("the producer failed earlier; it is rebuilt");
  if (!eos_) {
    // Sent by prepare_commit after the round's output (see there).
    pending_state_.push_back({store, part.number, std::string(sdk::view(key)),
                              value.ptr ? std::optional<std::string>(std::string(sdk::view(value)))
                                        : std::nullopt});
    return sdk::Status::ok();
  }
  sdk::Status st = begin_if_needed();
  if (!st) return st;
  return produce_state(store, part.number, key, value);
}

sdk::Status KafkaSink::produce_state(const std::string& store, int32_t partition, ex_bytes key,
                                     ex_bytes value) {
  rd_kafka_topic_t* rkt = topic_handle(store);
  const int64_t deadline = now_ms() + std::max<int64_t>(message_timeout_ms_, 30000);
  for (;;) {
    rd_kafka_resp_err_t err = static_cast<rd_kafka_resp_err_t>(rd_kafka_produce(
        rkt, partition, RD_KAFKA_MSG_F_COPY, const_cast<uint8_t*>(value.ptr),
        value.ptr ? value.len : 0, key.ptr, key.len, changelog_->marker()));
    if (err == 0) {
      host_.counter("kafka_sink_changelog_records_total", 1);
      host_.counter("kafka_sink_changelog_bytes_total", static_cast<double>(key.len + value.len));
      return sdk::Status::ok();
    }
    err = rd_kafka_last_error();
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL && now_ms() < deadline && !fatal()) {
      rd_kafka_poll(rk_, 10);
      continue;
    }
    if (fatal()) return fatal_status("changelog produce failed");
    if (err == RD_KAFKA_RESP_ERR__STATE && eos_)
      return abort_transaction(std::string("kafka sink: changelog write: ") + rd_kafka_err2str(err));
    return sdk::Status::retriable("kafka sink: cannot write changelog " + store + " [" +
                                  std::to_string(partition) + "]: " + rd_kafka_err2str(err));
  }
}

int64_t KafkaSink::state_position(const std::string& store, const sdk::Partition& part) {
  return changelog_ ? changelog_->position(store, part.number) : -1;
}

}  // namespace exactly::kafka
