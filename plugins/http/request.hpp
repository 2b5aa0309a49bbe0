// One record's HTTP request across its attempts. The body points into the batch being
// written: write() does not return before every request has a final outcome, so the
// batch outlives it and the value is never copied.
#pragma once

#include <curl/curl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "outcome.hpp"
#include "token_bucket.hpp"

namespace exactly::http {

struct Request {
  size_t index = 0;  // in the batch
  size_t cls = 0;    // rate class
  std::string url;
  curl_slist* headers = nullptr;
  std::string_view body;
  int attempts = 0;
  bool probe = false;
  Clock::time_point not_before{};
  std::string response;   // body of the last answer, up to response.body.max bytes
  long status = 0;
  Outcome last;
  bool done = false;
  bool delivered = false;
  std::string reason;     // for the error policy when not delivered
  // Not delivered, but the retry topic may take it (requeue.hpp): retries used up on a
  // retriable failure, or rerouted (class over its rate, fuse open) at `later_at`.
  enum class Later : uint8_t { no, failed, limited, fused };
  Later later = Later::no;
  Clock::time_point later_at{};

  Request() = default;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  Request(Request&& o) noexcept { *this = std::move(o); }
  Request& operator=(Request&& o) noexcept {
    if (this == &o) return *this;
    if (headers != nullptr) curl_slist_free_all(headers);
    index = o.index; cls = o.cls; url = std::move(o.url); headers = o.headers; o.headers = nullptr;
    body = o.body; attempts = o.attempts; probe = o.probe; not_before = o.not_before;
    response = std::move(o.response); status = o.status; last = std::move(o.last);
    done = o.done; delivered = o.delivered; reason = std::move(o.reason);
    later = o.later; later_at = o.later_at;
    return *this;
  }
  ~Request() {
    if (headers != nullptr) curl_slist_free_all(headers);
  }
};

}  // namespace exactly::http
