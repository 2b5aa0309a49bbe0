#include "outcome.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

namespace exactly::http {

Outcome classify(CURLcode code, long status, int64_t retry_after_s, const char* curl_error) {
  Outcome o;
  if (code != CURLE_OK) {
    std::string detail = curl_error != nullptr && *curl_error ? curl_error : curl_easy_strerror(code);
    // libcurl reports an answer that is not HTTP (a proxy or server sending garbage) as an
    // unsupported protocol, "Received HTTP/0.9 when not allowed": the next answer may be
    // fine, unlike a URL's scheme.
    if (code == CURLE_UNSUPPORTED_PROTOCOL && detail.find("HTTP/0.9") != std::string::npos) {
      o.what = "bad response (not HTTP): " + detail;
      o.verdict = Outcome::Verdict::retry;
      o.unhealthy = true;
      return o;
    }
    switch (code) {
      // Nothing a retry can change: the URL itself is wrong.
      case CURLE_URL_MALFORMAT:
      case CURLE_UNSUPPORTED_PROTOCOL:
        o.verdict = Outcome::Verdict::fail;
        o.what = "bad url: " + detail;
        return o;
      case CURLE_OPERATION_TIMEDOUT:
        o.what = "timeout: " + detail;
        break;
      default:
        o.what = "connection error: " + detail;
        break;
    }
    o.verdict = Outcome::Verdict::retry;
    o.unhealthy = true;
    return o;
  }
  o.what = "http " + std::to_string(status);
  if (status >= 200 && status < 300) {
    o.verdict = Outcome::Verdict::delivered;
  } else if (status == 429 || status == 503) {
    o.verdict = Outcome::Verdict::retry;
    o.unhealthy = status == 503;
    // The server's number, as libcurl parsed it: capped before the product, which would
    // overflow for a Retry-After near 2^63 (retry.after.max caps the wait itself).
    if (retry_after_s > 0)
      o.retry_after_ms = std::min<int64_t>(retry_after_s, INT64_MAX / 1000) * 1000;
  } else if (status == 408 || status >= 500) {
    o.verdict = Outcome::Verdict::retry;
    o.unhealthy = true;
  } else {
    o.verdict = Outcome::Verdict::fail;  // other 4xx (and 1xx/3xx): the request is wrong
  }
  return o;
}

std::chrono::milliseconds backoff(int retry, int64_t initial_ms, int64_t max_ms, std::mt19937& rng) {
  double d = static_cast<double>(initial_ms);
  for (int i = 1; i < retry && d < static_cast<double>(max_ms); ++i) d *= 2;
  d = std::min(d, static_cast<double>(max_ms));
  std::uniform_real_distribution<double> jitter(d / 2, d);
  return std::chrono::milliseconds(static_cast<int64_t>(jitter(rng)));
}

}  // namespace exactly::http
