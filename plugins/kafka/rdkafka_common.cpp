#include "rdkafka_common.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

namespace exactly::kafka {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ClientContext::fatal_reason(rd_kafka_t* rk) const {
  char buf[512] = {0};
  rd_kafka_resp_err_t err = rd_kafka_fatal_error(rk, buf, sizeof(buf));
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  return std::string(rd_kafka_err2name(err)) + ": " + buf;
}

void ClientContext::log_cb(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  auto* self = static_cast<ClientContext*>(rd_kafka_opaque(rk));
  if (self == nullptr) return;
  std::string line = std::string("librdkafka ") + fac + ": " + buf;
  uint64_t suppressed = 0;
  {
    std::lock_guard<std::mutex> g(self->log_mu_);
    self->protocol_suspicion_.note(fac, buf);
    // TxnCoordinator/1: Failed to add partition "T" [0] to transaction: Broker: Topic
    // authorization failed (topic names cannot hold a quote).
    if (std::strcmp(fac, "ADDPARTS") == 0 &&
        std::strstr(buf, rd_kafka_err2str(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)) != nullptr) {
      const char* at = std::strstr(buf, "partition \"");
      const char* end = at != nullptr ? std::strchr(at + 11, '"') : nullptr;
      if (end != nullptr) note_once(self->unauthorized_topics_, std::string(at + 11, end));
    }
    if (!self->repeats_.pass(line, now_ms(), suppressed)) return;
  }
  if (suppressed > 0)
    line += " (" + std::to_string(suppressed) + " more like it since it was last logged, within " +
            std::to_string(self->repeats_.window_ms() / 1000) + " s each, not logged)";
  self->host_.log(librdkafka_line_level(level, fac, buf), line);
}

void refresh_metadata(rd_kafka_t* rk, const std::string& topic, int timeout_ms) {
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  if (rkt == nullptr) return;
  const rd_kafka_metadata_t* md = nullptr;
  if (rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR && md != nullptr)
    rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
}

sdk::Status describe_topic_configs(rd_kafka_t* rk, const std::string& topic, int64_t timeout_ms,
                                   const std::string& what, std::map<std::string, std::string>& values,
                                   rd_kafka_resp_err_t* topic_error) {
  values.clear();
  if (topic_error != nullptr) *topic_error = RD_KAFKA_RESP_ERR__TIMED_OUT;
  rd_kafka_ConfigResource_t* r = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_DescribeConfigs(rk, &r, 1, nullptr, q);
  rd_kafka_ConfigResource_destroy(r);
  sdk::Status st = sdk::Status::retriable("kafka sink: " + what + " timed out");
  const int64_t deadline = now_ms() + timeout_ms;
  while (now_ms() < deadline) {
    rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 200);
    if (ev == nullptr) continue;
    if (rd_kafka_event_type(ev) != RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT) {
      rd_kafka_event_destroy(ev);
      continue;
    }
    if (topic_error != nullptr) *topic_error = rd_kafka_event_error(ev);
    if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      st = sdk::Status::retriable("kafka sink: " + what + ": " + rd_kafka_event_error_string(ev));
    } else {
      st = sdk::Status::ok();
      size_t n = 0;
      const rd_kafka_ConfigResource_t** res =
          rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
      if (topic_error != nullptr && n == 1) *topic_error = rd_kafka_ConfigResource_error(res[0]);
      for (size_t i = 0; i < n; ++i) {
        size_t cn = 0;
        const rd_kafka_ConfigEntry_t** entries = rd_kafka_ConfigResource_configs(res[i], &cn);
        for (size_t j = 0; j < cn; ++j) {
          const char* name = rd_kafka_ConfigEntry_name(entries[j]);
          const char* v = rd_kafka_ConfigEntry_value(entries[j]);
          if (name != nullptr && v != nullptr) values[name] = v;
        }
      }
    }
    rd_kafka_event_destroy(ev);
    break;
  }
  rd_kafka_queue_destroy(q);
  return st;
}

sdk::Status describe_topic_config(rd_kafka_t* rk, const std::string& topic, const std::string& key,
                                  int64_t timeout_ms, const std::string& what, std::string& value) {
  std::map<std::string, std::string> values;
  sdk::Status st = describe_topic_configs(rk, topic, timeout_ms, what, values);
  auto it = values.find(key);
  value = it == values.end() ? std::string() : it->second;
  return st;
}

rd_kafka_resp_err_t query_watermarks(rd_kafka_t* rk, const std::string& topic, int32_t partition,
                                     int64_t& low, int64_t& high, int timeout_ms) {
  const int64_t deadline = now_ms() + timeout_ms;
  int64_t got[2] = {-1, -1};
  const int64_t which[2] = {RD_KAFKA_OFFSET_BEGINNING, RD_KAFKA_OFFSET_END};
  for (int i = 0; i < 2; ++i) {
    const int64_t left = deadline - now_ms();
    if (left <= 0) return RD_KAFKA_RESP_ERR__TIMED_OUT;
    TplPtr list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), partition)->offset = which[i];
    rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(rk, list.get(), static_cast<int>(left));
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) err = list->elems[0].err;
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return err;
    if (list->elems[0].offset < 0) return RD_KAFKA_RESP_ERR__FAIL;
    got[i] = list->elems[0].offset;
  }
  low = got[0];
  high = got[1];
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

void ClientContext::error_cb(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  auto* self = static_cast<ClientContext*>(opaque);
  if (self == nullptr) return;
  if (err == RD_KAFKA_RESP_ERR__FATAL) {
    self->fatal_.store(true, std::memory_order_release);
    self->host_.error("kafka fatal error: " + self->fatal_reason(rk));
    return;
  }
  if ((err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL) &&
      self->security_failure_.empty()) {
    self->security_failure_ = reason ? reason : rd_kafka_err2str(static_cast<rd_kafka_resp_err_t>(err));
    self->security_failure_tls_ = err == RD_KAFKA_RESP_ERR__SSL;
  }
  // Transport-level trouble is retried by librdkafka itself; say so once per event. A
  // transport error is the broker failure librdkafka has just logged (FAIL, the same
  // text): kept for the errors that name it, not said twice (QA r10: a quarter of a
  // host's log in a broker outage was such pairs).
  std::string text = std::string(rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err))) + ": " +
                     (reason ? reason : "");
  if (err != RD_KAFKA_RESP_ERR__TRANSPORT) self->host_.warn("kafka: " + text);
  self->recent_error_ = std::move(text);
  self->recent_error_ms_ = now_ms();
}

ConfBuilder::ConfBuilder() : conf_(rd_kafka_conf_new()) {}

ConfBuilder::~ConfBuilder() {
  if (conf_) rd_kafka_conf_destroy(conf_);
}

void ConfBuilder::set(const std::string& key, const std::string& value,
                      const std::string& yaml_key) {
  char errstr[512];
  if (rd_kafka_conf_set(conf_, key.c_str(), value.c_str(), errstr, sizeof(errstr)) !=
      RD_KAFKA_CONF_OK)
    throw sdk::ConfigError(yaml_key, errstr);
}

void ConfBuilder::apply_user(const std::map<std::string, std::string>& user) {
  for (const auto& [k, v] : user) set(k, v, "rdkafka." + k);
}

std::string ConfBuilder::get(const std::string& key) const {
  char buf[512];
  size_t n = sizeof(buf);
  if (rd_kafka_conf_get(conf_, key.c_str(), buf, &n) != RD_KAFKA_CONF_OK) return {};
  return std::string(buf);
}

void ConfBuilder::route_callbacks(ClientContext* ctx) {
  rd_kafka_conf_set_opaque(conf_, ctx);
  rd_kafka_conf_set_log_cb(conf_, &ClientContext::log_cb);
  rd_kafka_conf_set_error_cb(conf_, &ClientContext::error_cb);
  // Logged from librdkafka's own threads as they happen (log_cb is thread-safe, and a
  // host's log may be called from any thread). Through the main queue they waited for the
  // component's next call: a transaction call blocked for 10 s in an outage held them back
  // and they came out late, stamped with the late time (QA r10).
  set("log.queue", "false", "rdkafka.log.queue");
}

rd_kafka_t* ConfBuilder::create(rd_kafka_type_t type) {
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(type, conf_, errstr, sizeof(errstr));
  if (rk == nullptr) throw sdk::ConfigError("rdkafka", errstr);
  conf_ = nullptr;  // owned by rk now
  return rk;
}

std::map<std::string, std::string> connection_settings(const std::map<std::string, std::string>& user) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : user)
    if (k == "security.protocol" || k.rfind("sasl.", 0) == 0 || k.rfind("ssl.", 0) == 0 ||
        k.rfind("ssl_", 0) == 0)
      out.emplace(k, v);
  return out;
}

namespace {

sdk::Status security_status(const ClientContext& ctx, const std::string& servers) {
  if (ctx.security_failure_is_tls()) {
    // librdkafka says "certificate verify failed" for an unknown CA and for a certificate
    // that does not name the host dialled alike, and points at ssl.ca.location either way
    // (QA: a host name the certificate lacked, read as a CA problem).
    const bool verify = ctx.security_failure().find("certificate verify failed") != std::string::npos ||
                        ctx.security_failure().find("could not be verified") != std::string::npos;
    return sdk::Status::config(
        "rdkafka", "TLS connection to " + servers + " failed: " + ctx.security_failure() +
                       (verify ? " (check rdkafka ssl.ca.location and the other ssl.* settings; with the "
                                 "right CA, the broker's certificate may not name the host in "
                                 "bootstrap.servers: compare its subjectAltName, or connect by a name it "
                                 "holds)"
                               : " (check rdkafka ssl.ca.location and the other ssl.* settings)"));
  }
  return sdk::Status::config("rdkafka", "authentication to " + servers + " failed: " +
                                            ctx.security_failure() +
                                            " (check rdkafka sasl.mechanism, sasl.username and sasl.password)");
}

}  // namespace

sdk::Status check_cluster(rd_kafka_t* rk, const std::string& servers, int64_t timeout_ms,
                          const std::vector<std::string>& topics,
                          const std::string& topics_key, const ClientContext* ctx) {
  const int64_t start = now_ms();
  const int64_t deadline = start + timeout_ms;
  // A topic created a moment ago may not be in every broker's metadata yet: one that is
  // missing is asked for again for up to this long before it counts as missing.
  const int64_t missing_deadline = start + std::min<int64_t>(timeout_ms, 5000);
  for (;;) {
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    // Short attempts so a broker that comes up during the wait is seen quickly.
    for (;;) {
      int64_t left = deadline - now_ms();
      int attempt = static_cast<int>(std::max<int64_t>(100, std::min<int64_t>(left, 2000)));
      err = rd_kafka_metadata(rk, 1, nullptr, &md, attempt);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      md = nullptr;
      if (rd_kafka_fatal_error(rk, nullptr, 0) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return sdk::Status::fatal("kafka client failed fatally while contacting " + servers);
      rd_kafka_poll(rk, 0);  // serves error_cb, which notes a security failure
      if (ctx != nullptr && !ctx->security_failure().empty()) return security_status(*ctx, servers);
      // A stop asked for meanwhile (ABI 1.5) need not wait out the timeout.
      if (ctx != nullptr && ctx->host().stopping()) {
        ctx->host().info("kafka: stop asked while waiting for " + servers + "; not waiting any longer");
        return sdk::Status::retriable("stopped while waiting for " + servers);
      }
      if (now_ms() >= deadline) {
        const std::string suspicion = ctx != nullptr ? ctx->protocol_suspicion() : std::string();
        return sdk::Status::retriable(
            "cannot reach " + servers + ": " + rd_kafka_err2str(err) + " (no metadata within " +
            std::to_string(timeout_ms) + " ms)" +
            (suspicion.empty() ? std::string()
                               : "; librdkafka suspects rdkafka security.protocol (" + suspicion +
                                     "): check that it is the brokers' listener's (PLAINTEXT, SSL, "
                                     "SASL_PLAINTEXT or SASL_SSL)"));
      }
    }
    std::set<std::string> have;
    for (int i = 0; i < md->topic_cnt; ++i)
      if (md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) have.insert(md->topics[i].topic);
    rd_kafka_metadata_destroy(md);
    std::string missing;
    for (const auto& t : topics)
      if (missing.empty() && !t.empty() && t[0] != '^' && have.count(t) == 0) missing = t;
    if (missing.empty()) return sdk::Status::ok();
    if (now_ms() >= missing_deadline) {
      // A listing of every topic leaves out those the client may not describe: ask for
      // this one by name, whose answer says so.
      if (topic_unauthorized(rk, missing))
        return sdk::Status::config(topics_key, "topic " + missing + " on " + servers +
                                                   " is not visible to this client (TOPIC_AUTHORIZATION_FAILED: an "
                                                   "ACL grants it no DESCRIBE, or denies it): grant it the "
                                                   "operations it needs on the topic (kafka-acls.sh --add "
                                                   "--allow-principal ... --topic " + missing + ")");
      return sdk::Status::config(topics_key, "topic " + missing + " does not exist on " + servers);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    rd_kafka_poll(rk, 0);
  }
}

void note_once(std::vector<std::string>& names, std::string name) {
  if (names.size() < 64 && std::find(names.begin(), names.end(), name) == names.end())
    names.push_back(std::move(name));
}

std::string acl_command(const std::map<std::string, std::string>& settings, const std::string& operations,
                        const std::string& resource) {
  auto user = settings.find("sasl.username");
  const std::string principal = user != settings.end() ? "User:" + user->second : "<this client's principal>";
  return "kafka-acls.sh --add --allow-principal " + principal + " " + operations + " " + resource;
}

bool topic_unauthorized(rd_kafka_t* rk, const std::string& topic) {
  // DescribeConfigs, not a metadata request for the topic: that one lets a producer's
  // broker with auto.create.topics.enable create the topic the caller found missing.
  std::map<std::string, std::string> unused;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  describe_topic_configs(rk, topic, 5000, "describing topic " + topic, unused, &err);
  return err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED;
}

std::string partition_name(const std::string& topic, int32_t partition) {
  return topic + "-" + std::to_string(partition);
}

std::string describe(const rd_kafka_error_t* e) {
  if (e == nullptr) return "success";
  std::string s = std::string(rd_kafka_error_name(e)) + ": " + rd_kafka_error_string(e);
  if (rd_kafka_error_is_fatal(e)) s += " (fatal)";
  else if (rd_kafka_error_txn_requires_abort(e)) s += " (transaction must abort)";
  else if (rd_kafka_error_is_retriable(e)) s += " (retriable)";
  return s;
}

}  // namespace exactly::kafka
