// One record's HTTP request across its attempts. The body points into the record's copy
// in the completion window, which outlives the request.
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
  size_t index = 0;  // the record's id in the completion window
  size_t cls = 0;    // rate class
  std::string class_value;  // what class.field gave (to find the class again on reconfigure)
  int32_t partition = 0;    // the record's input partition
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
    index = o.index; cls = o.cls; class_value = std::move(o.class_value); partition = o.partition;
    url = std::move(o.url); headers = o.headers; o.headers = nullptr;
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
