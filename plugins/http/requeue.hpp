// What happens to a request that was not delivered but may be tried later: re-enqueued
// to the retry topic, or left a record error. Retries used up on a retriable failure
// re-enqueue with `exactly.retry.count` one more than the record arrived with and a
// not-before time of now + backoff(count) (retry.topic.backoff.*), until the record has
// been re-enqueued retry.topic.max times; then (and for a non-retriable answer) it stays
// a record error for the pipeline's error policy. Rerouted records (when.limited,
// when.fused: reroute) were never tried: they keep their count and get the time the class
// could take them as not-before.
#pragma once

#include <exactly/sdk.hpp>

#include <memory>
#include <random>

#include "http_settings.hpp"
#include "rate_classes.hpp"
#include "request.hpp"
#include "retry_topic.hpp"

namespace exactly::http {

class Requeue {
 public:
  Requeue(sdk::Host host, const RetryTopicSettings& s);
  sdk::Status open() { return topic_.open(); }
  // True when `q` (for record `r`) went to the retry topic. False when it stays a record
  // error; q.reason then also says why it was not re-enqueued. An error Status when the
  // producer failed as a whole (the round must not commit).
  bool offer(const ex_record& r, Request& q, RateClass& c, sdk::Status& st);
  // prepare_commit: every re-enqueued record acknowledged.
  sdk::Status flush() { return topic_.flush(); }

 private:
  RetryTopicSettings s_;
  RetryTopic topic_;
  std::mt19937 rng_{std::random_device{}()};
};

// The requeued counters of a class, then zeroed (from HttpSink::publish).
void publish_requeued(const sdk::Host& host, RateClass& c);

}  // namespace exactly::http
