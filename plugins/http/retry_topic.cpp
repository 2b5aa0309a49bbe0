#include "retry_topic.hpp"
#include "header_text.hpp"

#include <cstring>
#include <thread>

namespace exactly::http {

RetryTopic::RetryTopic(sdk::Host host, const RetryTopicSettings& s)
    : ClientContext(host), topic_(s.topic), servers_(s.servers), open_timeout_ms_(s.open_timeout_ms) {
  kafka::ConfBuilder b;
  b.set("socket.nagle.disable", "true", "retry.topic.rdkafka.socket.nagle.disable");
  b.set("linger.ms", "5", "retry.topic.rdkafka.linger.ms");
  // A broker that stays away fails the flush (and the round) after this, not never.
  b.set("message.timeout.ms", "30000", "retry.topic.rdkafka.message.timeout.ms");
  for (const auto& [k, v] : s.rdkafka) b.set(k, v, "retry.topic.rdkafka." + k);
  b.set("bootstrap.servers", s.servers, "retry.topic.bootstrap.servers");
  b.set("enable.idempotence", "true", "retry.topic.rdkafka.enable.idempotence");
  flush_timeout_ms_ = std::stoll(b.get("message.timeout.ms")) + 5000;
  b.route_callbacks(this);
  rd_kafka_conf_set_dr_msg_cb(b.raw(), &RetryTopic::on_delivery);
  rk_ = b.create(RD_KAFKA_PRODUCER);
}

RetryTopic::~RetryTopic() {
  // Whatever is still queued belongs to a round that did not commit: it is replayed.
  if (rk_ == nullptr) return;
  rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  rd_kafka_poll(rk_, 0);
  rd_kafka_destroy(rk_);
}

sdk::Status RetryTopic::open() {
  return kafka::check_cluster(rk_, servers_, open_timeout_ms_, {topic_}, "retry.topic", this);
}

void RetryTopic::on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* self = static_cast<RetryTopic*>(static_cast<kafka::ClientContext*>(opaque));
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
  if (self->failed_++ == 0) self->first_failure_ = rd_kafka_err2str(m->err);
}

sdk::Status RetryTopic::produce(const ex_record& r, int count, int64_t not_before_ms,
                                const std::string& reason) {
  rd_kafka_headers_t* h = rd_kafka_headers_new(r.header_count + 3);
  for (uint32_t i = 0; i < r.header_count; ++i) {
    std::string_view name = sdk::view(r.headers[i].key);
    if (name == kRetryCountHeader || name == kNotBeforeHeader || name == kRetryReasonHeader) continue;
    std::string_view value = sdk::view(r.headers[i].value);
    rd_kafka_header_add(h, name.data(), static_cast<ssize_t>(name.size()),
                        r.headers[i].value.ptr == nullptr ? nullptr : value.data(), value.size());
  }
  std::string c = std::to_string(count), nb = std::to_string(not_before_ms);
  rd_kafka_header_add(h, kRetryCountHeader, -1, c.data(), c.size());
  rd_kafka_header_add(h, kNotBeforeHeader, -1, nb.data(), nb.size());
  const std::string line = one_header_line(reason);
  rd_kafka_header_add(h, kRetryReasonHeader, -1, line.data(), line.size());
  // (librdkafka's macros do not parenthesise their arguments.)
  const void* key = r.key.ptr;
  void* value = const_cast<uint8_t*>(r.value.ptr);
  const size_t key_len = key == nullptr ? 0 : r.key.len, value_len = value == nullptr ? 0 : r.value.len;
  for (;;) {
    rd_kafka_resp_err_t err = rd_kafka_producev(
        rk_, RD_KAFKA_V_TOPIC(topic_.c_str()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_KEY(key, key_len), RD_KAFKA_V_VALUE(value, value_len),
        RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;  // the message owns the headers now
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(rk_, 10);
      continue;
    }
    rd_kafka_headers_destroy(h);
    if (fatal()) return sdk::Status::fatal("retry topic producer: " + fatal_reason(rk_));
    return sdk::Status::retriable("retry topic " + topic_ + ": " + rd_kafka_err2str(err));
  }
  rd_kafka_poll(rk_, 0);  // delivery reports and logs
  return sdk::Status::ok();
}

sdk::Status RetryTopic::flush() {
  const int64_t deadline = kafka::now_ms() + flush_timeout_ms_;
  while (rd_kafka_outq_len(rk_) > 0 && kafka::now_ms() < deadline) rd_kafka_flush(rk_, 100);
  rd_kafka_poll(rk_, 0);
  if (fatal()) return sdk::Status::fatal("retry topic producer: " + fatal_reason(rk_));
  if (rd_kafka_outq_len(rk_) > 0)
    return sdk::Status::retriable("retry topic " + topic_ + ": records not acknowledged within " +
                                  std::to_string(flush_timeout_ms_) + " ms");
  if (failed_ == 0) return sdk::Status::ok();
  std::string why = std::to_string(failed_) + " record(s) could not be written to retry topic " +
                    topic_ + " (first: " + first_failure_ + ")";
  failed_ = 0;
  first_failure_.clear();
  return sdk::Status::retriable(why);
}

}  // namespace exactly::http
