#include "redis_settings.hpp"

#include <ctime>
#include <set>

namespace exactly::dedupe {

using sdk::ConfigError;

RedisEndpoint parse_endpoint(const std::string& key, const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw ConfigError(key, "expected host:port, e.g. 127.0.0.1:6379; got '" + text + "'");
  RedisEndpoint e;
  e.host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  char* end = nullptr;
  long v = std::strtol(port.c_str(), &end, 10);
  if (*end != '\0' || v < 1 || v > 65535)
    throw ConfigError(key, "port must be 1-65535 in '" + text + "'");
  e.port = static_cast<int>(v);
  return e;
}

int64_t parse_instant_ms(const std::string& key, const std::string& text) {
  char* end = nullptr;
  long long ms = std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && *end == '\0') {
    if (ms <= 0) throw ConfigError(key, "must be a positive unix time in milliseconds");
    return ms;
  }
  std::tm tm{};
  const char* rest = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr || std::string(rest) != "Z")
    throw ConfigError(key, "expected a UTC time such as 2026-11-23T12:30:00Z or unix "
                           "milliseconds; got '" + text + "'");
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

namespace {
std::vector<RedisEndpoint> endpoints(const sdk::Config& c, const std::string& key) {
  std::vector<RedisEndpoint> out;
  std::set<std::string> seen;
  for (const std::string& s : c.get_list(key)) {
    out.push_back(parse_endpoint(key, s));
    if (!seen.insert(out.back().text()).second)
      throw ConfigError(key, "lists " + s + " twice (each shard is one server)");
  }
  return out;
}
}  // namespace

RedisSettings RedisSettings::parse(const sdk::Config& c) {
  RedisSettings s;
  s.id = parse_id_spec(c);

  s.shards = endpoints(c, "shards");
  if (s.shards.empty())
    throw ConfigError("shards", "list at least one Redis server, e.g. [127.0.0.1:6379]");
  s.previous_shards = endpoints(c, "shards.previous");
  const bool has_cutover = c.has("shards.cutover") && !c.get_string("shards.cutover").empty();
  if (!s.previous_shards.empty() && !has_cutover)
    throw ConfigError("shards.cutover", "required with shards.previous: the time from which new "
                                        "claims go to `shards` (the same on every host)");
  if (s.previous_shards.empty() && has_cutover)
    throw ConfigError("shards.cutover", "only meaningful with shards.previous (the layout "
                                        "before the cutover)");
  if (has_cutover) s.cutover_ms = parse_instant_ms("shards.cutover", c.get_string("shards.cutover"));
  s.cutover_grace_ms = c.get_duration_ms("shards.cutover.grace", 60000);
  if (s.cutover_grace_ms < 0) throw ConfigError("shards.cutover.grace", "must not be negative");

  s.window_ms = c.get_duration_ms("retention.max.age", 0);
  if (s.window_ms <= 0)
    throw ConfigError("retention.max.age", "required for the Redis store: how long an id is "
                                           "remembered (the window), e.g. 24h");
  // Default: one window per slot, so a lookup reads two slots (the script's cost is
  // per Redis call); claims then live one to two windows (1.5 on average).
  s.bucket_span_ms = c.get_duration_ms("bucket.span", std::max<int64_t>(1000, s.window_ms));
  if (s.bucket_span_ms < 1000 || s.bucket_span_ms > s.window_ms)
    throw ConfigError("bucket.span", "must be between 1s and retention.max.age");
  s.bucket_slices = c.get_int("bucket.slices", 1024);
  if (s.bucket_slices < 1 || s.bucket_slices > (int64_t{1} << 24))
    throw ConfigError("bucket.slices", "must be between 1 and 16777216");
  s.key_prefix = c.get_string("key.prefix");

  int64_t fp = c.get_int("fingerprint.bytes", 4);
  if (fp != 0 && fp != 4 && fp != 8)
    throw ConfigError("fingerprint.bytes", "must be 0 (no conflict detection), 4 or 8");
  s.fingerprint_bytes = static_cast<uint32_t>(fp);

  std::string conflict = c.get_string("on.conflict", "duplicate");
  if (conflict == "duplicate") s.on_conflict = ConflictPolicy::duplicate;
  else if (conflict == "reject") s.on_conflict = ConflictPolicy::reject;
  else if (conflict == "stop") s.on_conflict = ConflictPolicy::stop;
  else throw ConfigError("on.conflict", "expected duplicate, reject or stop, got '" + conflict + "'");

  std::string durability = c.get_string("durability", "none");
  if (durability == "none") s.durability = Durability::none;
  else if (durability == "aof-always") s.durability = Durability::aof_always;
  else if (durability == "replicas") s.durability = Durability::replicas;
  else throw ConfigError("durability", "expected none, aof-always or replicas, got '" + durability + "'");
  s.durability_replicas = c.get_int("durability.replicas", 1);
  if (s.durability_replicas < 1)
    throw ConfigError("durability.replicas", "must be 1 or more");
  s.durability_timeout_ms = c.get_duration_ms("durability.timeout", 5000);
  if (s.durability_timeout_ms <= 0) throw ConfigError("durability.timeout", "must be positive");
  s.timeout_ms = c.get_duration_ms("redis.timeout", 5000);
  s.auth.username = c.get_string("username", "");
  s.auth.password = c.get_string("password", "");
  if (!s.auth.username.empty() && s.auth.password.empty())
    throw sdk::ConfigError("username", "a username needs its password (password)");
  if (s.timeout_ms <= 0) throw ConfigError("redis.timeout", "must be positive");
  s.tls.enabled = c.get_bool("tls", false);
  s.tls.ca_file = c.get_string("tls.ca.file", "");
  s.tls.cert_file = c.get_string("tls.cert.file", "");
  s.tls.key_file = c.get_string("tls.key.file", "");
  s.tls.server_name = c.get_string("tls.server.name", "");
  if (!s.tls.enabled) {
    // A TLS setting without `tls: true` would be a plaintext connection the author did
    // not mean to make.
    for (const char* k : {"tls.ca.file", "tls.cert.file", "tls.key.file", "tls.server.name"})
      if (!c.get_string(k, "").empty())
        throw ConfigError(k, "needs tls: true (without it the connection is not encrypted)");
  }
  if (s.tls.cert_file.empty() != s.tls.key_file.empty())
    throw ConfigError(s.tls.cert_file.empty() ? "tls.cert.file" : "tls.key.file",
                      "tls.cert.file and tls.key.file go together (a client certificate and its key)");
  return s;
}

}  // namespace exactly::dedupe
