#include "retry_settings.hpp"

#include "rdkafka_common.hpp"

namespace exactly::http {

RetryTopicSettings RetryTopicSettings::parse(const sdk::Config& c) {
  RetryTopicSettings s;
  s.topic = c.get_string("retry.topic");
  s.servers = c.get_string("retry.topic.bootstrap.servers");
  s.rdkafka = c.get_map("retry.topic.rdkafka");
  // (The other retry.topic.* keys arrive with their schema defaults whether set or not:
  // their ranges are checked either way, so a value out of range is refused before the
  // retry topic is turned on.)
  int64_t max = c.get_int("retry.topic.max", 3);
  if (max < 0 || max > 1000) throw sdk::ConfigError("retry.topic.max", "must be between 0 and 1000");
  s.backoff_initial_ms = c.get_duration_ms("retry.topic.backoff.initial", 1000);
  s.backoff_max_ms = c.get_duration_ms("retry.topic.backoff.max", 300000);
  if (s.backoff_initial_ms < 0 || s.backoff_max_ms < s.backoff_initial_ms)
    throw sdk::ConfigError("retry.topic.backoff.max", "must be at least retry.topic.backoff.initial");
  if (!s.on()) {
    if (!s.rdkafka.empty()) throw sdk::ConfigError("retry.topic.rdkafka", "only applies with retry.topic");
    return s;
  }
  for (char ch : s.topic)
    if (static_cast<unsigned char>(ch) <= 32 || static_cast<unsigned char>(ch) >= 127)
      throw sdk::ConfigError("retry.topic", "a topic name of visible ASCII characters");
  if (s.servers.empty())
    throw sdk::ConfigError("retry.topic.bootstrap.servers", "is required with retry.topic");
  s.max = static_cast<int>(max);
  s.open_timeout_ms = c.get_duration_ms("retry.topic.open.timeout", 30000);
  if (s.open_timeout_ms < 0) throw sdk::ConfigError("retry.topic.open.timeout", "must not be negative");
  for (const char* k : {"bootstrap.servers", "enable.idempotence", "transactional.id"})
    if (s.rdkafka.count(k) != 0)
      throw sdk::ConfigError(std::string("retry.topic.rdkafka.") + k,
                             "set by the sink (the servers with retry.topic.bootstrap.servers; "
                             "the producer is always idempotent and not transactional)");
  // plugin.library.paths is left to create: setting it loads the libraries it names.
  kafka::ConfBuilder b;
  for (const auto& [k, v] : s.rdkafka)
    if (k != "plugin.library.paths") b.set(k, v, "retry.topic.rdkafka." + k);
  return s;
}

bool parse_when_limited(const std::string& key, const std::string& value) {
  if (value == "reroute") return true;
  if (value == "backpressure") return false;
  throw sdk::ConfigError(key, "expected backpressure or reroute, got '" + value + "'");
}

bool parse_when_fused(const std::string& key, const std::string& value) {
  if (value == "reroute") return true;
  if (value == "reject") return false;
  throw sdk::ConfigError(key, "expected reject or reroute, got '" + value + "'");
}

}  // namespace exactly::http
