// The http sink's configuration, read and checked once (create and reconfigure).
#pragma once

#include <exactly/sdk.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "field_ref.hpp"
#include "retry_settings.hpp"
#include "url_template.hpp"

namespace exactly::http {

struct ClassSettings {
  double rate = 0;   // requests per second; 0 = unlimited
  double burst = 0;  // 0 = max(1, rate)
  bool open = false; // fuse opened by hand
  int fuse_failures = 0;
  std::chrono::milliseconds fuse_cooldown{10000};
  // What a class over its rate / with an open fuse does: wait (backpressure) or reject
  // (false), or go to the retry topic (true; requeue.hpp).
  bool reroute_limited = false;
  bool reroute_fused = false;
  bool operator==(const ClassSettings&) const = default;
};

struct Settings {
  std::string url_text;
  UrlTemplate url;
  std::string method = "POST";
  std::vector<std::pair<std::string, std::string>> headers;  // static
  bool forward_headers = true;
  std::string content_type;
  std::optional<FieldRef> idempotency_key;
  std::string idempotency_header = "Idempotency-Key";
  int max_in_flight = 64;
  // The completion window: records written but not final, across write() calls.
  int64_t window_records = 10000;
  int64_t window_bytes = 64LL << 20;
  int64_t connect_timeout_ms = 5000;
  int64_t request_timeout_ms = 30000;
  std::string ca_file;
  bool tls_verify = true;
  int retry_max = 10;
  int64_t backoff_initial_ms = 100;
  int64_t backoff_max_ms = 10000;
  int64_t retry_after_max_ms = 60000;
  size_t response_max = 512;
  std::optional<FieldRef> class_field;
  std::string class_field_text;
  // Always holds "default": records whose class is missing or not listed.
  std::map<std::string, ClassSettings> classes;
  RetryTopicSettings retry_topic;
  // Sinks of the host with the same rate.group share each class's limit ("": own).
  std::string rate_group;
  // With when.limited: reroute, a record waits for its class this long at most.
  int64_t reroute_wait_max_ms = 1000;

  // Throws sdk::ConfigError naming the key.
  static Settings from(const sdk::Config& c);
  // from() plus what only create() checks (delivery); HttpSink::validate (ABI 1.3).
  static void check(const sdk::Config& c);
  // Everything but the classes (what reconfigure cannot change in place).
  bool same_connection_settings(const Settings& o) const;
};

// "250ms", "5s", "2m", "1h" or plain milliseconds; for values inside maps, which the
// host passes through without normalising. Throws sdk::ConfigError.
std::chrono::milliseconds parse_duration(const std::string& key, const std::string& text);

}  // namespace exactly::http
