// The producer behind the http sink's retry topic: an idempotent librdkafka producer
// (not transactional: the sink's round has no transaction; re-sends after a crash are
// made harmless by the idempotency key). A record keeps its key, value and headers; the
// retry headers are replaced. flush() is the sink's prepare_commit: the round commits only
// when every record re-enqueued in it is acknowledged by the cluster.
#pragma once

#include <exactly/sdk.hpp>
#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <string>

#include "rdkafka_common.hpp"
#include "retry_settings.hpp"

namespace exactly::http {

class RetryTopic final : public kafka::ClientContext {
 public:
  RetryTopic(sdk::Host host, const RetryTopicSettings& s);
  ~RetryTopic() override;
  RetryTopic(const RetryTopic&) = delete;
  RetryTopic& operator=(const RetryTopic&) = delete;

  // The cluster answers and the topic exists (bounded by retry.topic.open.timeout).
  sdk::Status open();
  // Queues a copy of `r` with `exactly.retry.count: count`, `exactly.not-before:
  // not_before_ms` and `exactly.retry.reason: reason`. An error when librdkafka refuses it
  // at once (too large, unknown topic, fatal).
  sdk::Status produce(const ex_record& r, int count, int64_t not_before_ms, const std::string& reason);
  // Waits until every queued record is acknowledged; retriable error naming the first
  // record that failed (the round is then aborted and replayed).
  sdk::Status flush();
  const std::string& topic() const { return topic_; }

 private:
  static void on_delivery(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque);

  std::string topic_;
  std::string servers_;
  int64_t open_timeout_ms_;
  int64_t flush_timeout_ms_;
  rd_kafka_t* rk_ = nullptr;
  size_t failed_ = 0;  // deliveries failed since the last flush
  std::string first_failure_;
};

}  // namespace exactly::http
