// The http sink's retry topic settings (`retry.topic*`) and the per-class outcome words
// (`when.limited`, `when.fused`). Parsed with the rest of the settings (create, validate,
// reconfigure); throw sdk::ConfigError naming the key.
#pragma once

#include <exactly/sdk.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace exactly::http {

// Header names the sink writes on a re-enqueued record (the kafka source reads the
// not-before one with `not.before.header: exactly.not-before`).
inline constexpr const char* kRetryCountHeader = "exactly.retry.count";
inline constexpr const char* kNotBeforeHeader = "exactly.not-before";
inline constexpr const char* kRetryReasonHeader = "exactly.retry.reason";

struct RetryTopicSettings {
  std::string topic;    // empty: no retry topic
  std::string servers;  // retry.topic.bootstrap.servers
  std::map<std::string, std::string> rdkafka;  // retry.topic.rdkafka.*
  int max = 3;          // re-enqueues of one record after failed attempts
  int64_t backoff_initial_ms = 1000;
  int64_t backoff_max_ms = 300000;
  int64_t open_timeout_ms = 30000;
  bool operator==(const RetryTopicSettings&) const = default;
  bool on() const { return !topic.empty(); }

  // librdkafka checks each property on a configuration that never becomes a client.
  static RetryTopicSettings parse(const sdk::Config& c);
};

// `backpressure` / `reroute` (when.limited), `reject` / `reroute` (when.fused): true for
// reroute.
bool parse_when_limited(const std::string& key, const std::string& value);
bool parse_when_fused(const std::string& key, const std::string& value);

}  // namespace exactly::http
