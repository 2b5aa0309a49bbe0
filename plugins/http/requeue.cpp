#include "requeue.hpp"

#include <algorithm>
#include <chrono>

#include "outcome.hpp"
#include "rdkafka_common.hpp"

namespace exactly::http {

namespace {

// The count the record arrived with (0 without the header or when it is not a number).
int retry_count_of(const ex_record& r) {
  int n = 0;
  for (uint32_t i = 0; i < r.header_count; ++i) {
    if (sdk::view(r.headers[i].key) != kRetryCountHeader) continue;
    std::string_view v = sdk::view(r.headers[i].value);
    n = 0;
    for (char ch : v) {
      if (ch < '0' || ch > '9' || n > 100000) {
        n = 0;
        break;
      }
      n = n * 10 + (ch - '0');
    }
  }
  return n;
}

}  // namespace

Requeue::Requeue(sdk::Host host, const RetryTopicSettings& s) : s_(s), topic_(host, s) {}

bool Requeue::offer(const ex_record& r, Request& q, RateClass& c, sdk::Status& st) {
  if (q.later == Request::Later::no) return false;
  const int count = retry_count_of(r);
  int next = count;
  int64_t not_before = kafka::wall_ms();
  if (q.later == Request::Later::failed) {
    if (count >= s_.max) {
      q.reason += "; re-enqueued " + std::to_string(count) + " time(s) through " + topic_.topic() +
                  " already (retry.topic.max " + std::to_string(s_.max) + ")";
      ++c.failures;  // final after all: the dispatcher left it uncounted
      return false;
    }
    next = count + 1;
    not_before += backoff(next, s_.backoff_initial_ms, s_.backoff_max_ms, rng_).count();
  } else {
    auto wait = q.later_at - Clock::now();
    not_before += std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
  }
  st = topic_.produce(r, next, not_before, q.reason);
  if (!st) return false;
  switch (q.later) {
    case Request::Later::failed: ++c.requeued_failed; break;
    case Request::Later::limited: ++c.requeued_limited; break;
    case Request::Later::fused: ++c.requeued_fused; break;
    case Request::Later::no: break;
  }
  return true;
}

void publish_requeued(const sdk::Host& host, RateClass& c) {
  auto emit = [&](uint64_t& n, const char* reason) {
    if (n == 0) return;
    std::string labels = c.labels + ",reason=" + reason;
    host.counter("http_sink_requeued_total", static_cast<double>(n), labels.c_str());
    n = 0;
  };
  emit(c.requeued_failed, "failed");
  emit(c.requeued_limited, "limited");
  emit(c.requeued_fused, "fused");
}

}  // namespace exactly::http
