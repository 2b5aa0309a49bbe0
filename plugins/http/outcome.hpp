// What one HTTP attempt's result means: delivered, worth another try, or final.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>

namespace exactly::http {

struct Outcome {
  enum class Verdict { delivered, retry, fail };
  Verdict verdict = Verdict::fail;
  // True for the failures that say the downstream is unwell (connection errors, timeouts,
  // 5xx): they count towards the class's fuse. A 4xx or a 429 is an answer about the
  // request or the rate, not about the service's health.
  bool unhealthy = false;
  int64_t retry_after_ms = -1;  // from a Retry-After header, else -1
  std::string what;             // "http 503", "timeout: ...", for logs and dead letters
};

// `retry_after_s` is CURLINFO_RETRY_AFTER (-1 or 0 when absent).
Outcome classify(CURLcode code, long status, int64_t retry_after_s, const char* curl_error);

// Exponential backoff with jitter: the n-th retry (n >= 1) waits a random time in
// [d/2, d], d = min(max, initial * 2^(n-1)), so that many records failing together do not
// come back together.
std::chrono::milliseconds backoff(int retry, int64_t initial_ms, int64_t max_ms, std::mt19937& rng);

}  // namespace exactly::http
