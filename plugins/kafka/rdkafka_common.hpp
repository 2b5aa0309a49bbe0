// Pieces both kafka components share: owning handles for librdkafka objects, building a
// librdkafka configuration from plugin settings, routing librdkafka logs/errors to the
// host, and the bounded "can we reach the cluster, do the topics exist" check at open.
#pragma once

#include <exactly/sdk.hpp>
#include <librdkafka/rdkafka.h>

#include "log_level.hpp"
#include "protocol_suspicion.hpp"
#include "repeat_filter.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace exactly::kafka {

struct TplDeleter {
  void operator()(rd_kafka_topic_partition_list_t* p) const {
    if (p) rd_kafka_topic_partition_list_destroy(p);
  }
};
using TplPtr = std::unique_ptr<rd_kafka_topic_partition_list_t, TplDeleter>;

struct ErrorDeleter {
  void operator()(rd_kafka_error_t* e) const {
    if (e) rd_kafka_error_destroy(e);
  }
};
using ErrorPtr = std::unique_ptr<rd_kafka_error_t, ErrorDeleter>;

struct GroupMetadataDeleter {
  void operator()(rd_kafka_consumer_group_metadata_t* m) const {
    if (m) rd_kafka_consumer_group_metadata_destroy(m);
  }
};
using GroupMetadataPtr =
    std::unique_ptr<rd_kafka_consumer_group_metadata_t, GroupMetadataDeleter>;

int64_t now_ms();
// The wall clock in epoch milliseconds: the clock of not-before times, which travel in
// record headers between hosts (now_ms() is steady, for durations).
int64_t wall_ms();

// What librdkafka's callbacks reach through rd_kafka_opaque(): the host to log to, and
// the fatal-error latch. Components derive from it and pass `this` as the opaque.
class ClientContext {
 public:
  explicit ClientContext(sdk::Host host) : host_(host) {}
  virtual ~ClientContext() = default;
  const sdk::Host& host() const { return host_; }
  bool fatal() const { return fatal_.load(std::memory_order_acquire); }
  // The first SASL authentication or TLS failure librdkafka reported, or "". librdkafka
  // only retries these (they never fail a call), so open() asks here to fail at once
  // instead of waiting out open.timeout for metadata that cannot come.
  const std::string& security_failure() const { return security_failure_; }
  bool security_failure_is_tls() const { return security_failure_tls_; }
  // librdkafka's last line that suspects the connection's security.protocol (a plaintext
  // client at a TLS listener, or the other way round), or "": a broker that cannot be
  // reached for that reason is otherwise reported as unreachable, and retried for ever.
  std::string protocol_suspicion() const {
    std::lock_guard<std::mutex> g(log_mu_);
    return protocol_suspicion_.current();
  }
  // librdkafka's latest error event ("_AUTHENTICATION: SASL authentication error: ..."),
  // when it came within `within_ms` of `now`, or "": a check that finds something not
  // moving names what the client last complained of (a revoked password shows only
  // there). Set and read on the component's own thread (error_cb runs in its polls).
  std::string recent_error(int64_t now, int64_t within_ms) const {
    return !recent_error_.empty() && now - recent_error_ms_ <= within_ms ? recent_error_ : std::string();
  }
  int64_t recent_error_ms() const { return recent_error_ms_; }
  // Topics the cluster refused to add to a transaction for want of rights since the last
  // call (librdkafka names them only in its ADDPARTS log line; the transaction's error
  // says "Topic authorization failed" without the topic).
  std::vector<std::string> take_unauthorized_topics() {
    std::lock_guard<std::mutex> g(log_mu_);
    return std::exchange(unauthorized_topics_, {});
  }
  // librdkafka's fatal error text, or "".
  std::string fatal_reason(rd_kafka_t* rk) const;

  static void log_cb(const rd_kafka_t* rk, int level, const char* fac, const char* buf);
  static void error_cb(rd_kafka_t* rk, int err, const char* reason, void* opaque);

 protected:
  sdk::Host host_;
  std::atomic<bool> fatal_{false};
  // Set by error_cb, which runs inside the component's own poll calls (its thread).
  std::string security_failure_;
  bool security_failure_tls_ = false;
  std::string recent_error_;
  int64_t recent_error_ms_ = 0;

 private:
  mutable std::mutex log_mu_;
  RepeatFilter repeats_{5000};  // librdkafka's own lines (repeat_filter.hpp)
  ProtocolSuspicion protocol_suspicion_;
  std::vector<std::string> unauthorized_topics_;
};

// Builds an rd_kafka_conf_t. Errors become ConfigError naming the YAML key, so a typo in
// `rdkafka: {...}` points at the offending entry.
class ConfBuilder {
 public:
  ConfBuilder();
  ~ConfBuilder();
  ConfBuilder(const ConfBuilder&) = delete;
  ConfBuilder& operator=(const ConfBuilder&) = delete;

  void set(const std::string& key, const std::string& value, const std::string& yaml_key);
  // The user's pass-through map; keys are librdkafka property names.
  void apply_user(const std::map<std::string, std::string>& user);
  std::string get(const std::string& key) const;
  // Logs and errors are served from the component's own poll calls (the host's thread),
  // never from librdkafka's internal threads.
  void route_callbacks(ClientContext* ctx);
  // For settings without a string form (callbacks).
  rd_kafka_conf_t* raw() { return conf_; }
  // Creates the handle; the builder no longer owns the configuration afterwards.
  rd_kafka_t* create(rd_kafka_type_t type);

 private:
  rd_kafka_conf_t* conf_;
};

// Waits (bounded) for cluster metadata. Returns retriable "cannot reach <servers>: ..."
// when no broker answers, and Status::config(topics_key, "topic X does not exist") for
// a named topic the cluster does not have. Topics starting with '^' are patterns and
// are not checked. A SASL or TLS failure that `ctx` saw is a config error at once: the
// same credentials and certificates are used on every retry (a reload re-reads them).
sdk::Status check_cluster(rd_kafka_t* rk, const std::string& servers, int64_t timeout_ms,
                          const std::vector<std::string>& topics, const std::string& topics_key,
                          const ClientContext* ctx = nullptr);

// Adds `name` to `names` unless it is there or `names` holds 64 already (topics named in
// librdkafka's reports, kept until the sink takes them).
void note_once(std::vector<std::string>& names, std::string name);

// The kafka-acls.sh command that would allow what the cluster refused: `operations`
// ("--operation Read") on `resource` ("--topic T", "--group G"), for the principal of the
// client's sasl.username among `settings` (a placeholder without one).
std::string acl_command(const std::map<std::string, std::string>& settings, const std::string& operations,
                        const std::string& resource);

// True when the cluster says this client may not see `topic` (TOPIC_AUTHORIZATION_FAILED
// to a DescribeConfigs of it): a listing of all topics leaves such a topic out, as if it
// did not exist.
bool topic_unauthorized(rd_kafka_t* rk, const std::string& topic);

// Every config of `topic` as the cluster reports it (DescribeConfigs), name -> value;
// empty when the topic reports none (not there yet, say). A failed or timed-out request
// is retriable, naming `what` ("kafka sink: <what>: ..."). `topic_error`, if given: the
// request's or the topic's own error (TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PART).
sdk::Status describe_topic_configs(rd_kafka_t* rk, const std::string& topic, int64_t timeout_ms,
                                   const std::string& what, std::map<std::string, std::string>& values,
                                   rd_kafka_resp_err_t* topic_error = nullptr);
// One of them, in `value` (empty when not reported).
sdk::Status describe_topic_config(rd_kafka_t* rk, const std::string& topic, const std::string& key,
                                  int64_t timeout_ms, const std::string& what, std::string& value);

// The entries of a user's `rdkafka` map that say how to connect and authenticate
// (security.protocol, sasl.*, ssl.*): what a helper client of the same component, such
// as a changelog reader, needs to reach the same cluster.
std::map<std::string, std::string> connection_settings(const std::map<std::string, std::string>& user);


// Asks the cluster for `topic`'s metadata on `rk` (at most `timeout_ms`), which updates
// librdkafka's cache of it: its partitions' leaders, and partitions added since. A handle
// otherwise learns of them only at its next periodic refresh
// (topic.metadata.refresh.interval.ms, 5 minutes by default).
void refresh_metadata(rd_kafka_t* rk, const std::string& topic, int timeout_ms);

// The first and the end offset of a partition as the broker has them now (the end is the
// last stable offset for a read_committed client), asked for within `timeout_ms`. Not
// rd_kafka_query_watermark_offsets: in 2.0.2 its wait for the answer has no deadline, so a
// partition whose leader is down held the caller until that broker came back (fixed in
// later releases); rd_kafka_offsets_for_times sends the same ListOffsets request and
// gives up at its timeout. TIMED_OUT or the broker's error otherwise.
rd_kafka_resp_err_t query_watermarks(rd_kafka_t* rk, const std::string& topic, int32_t partition,
                                     int64_t& low, int64_t& high, int timeout_ms);

// "<topic>-<partition>", the stable partition name the host keys state by.
std::string partition_name(const std::string& topic, int32_t partition);

// Text of an rd_kafka_error_t with its class, for messages.
std::string describe(const rd_kafka_error_t* e);

}  // namespace exactly::kafka
