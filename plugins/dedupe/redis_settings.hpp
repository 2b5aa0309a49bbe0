// The dedupe-redis transform's configuration, validated (ConfigError names the key).
#pragma once

#include <exactly/sdk.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "dedupe_settings.hpp"
#include "id_extractor.hpp"

namespace exactly::dedupe {

struct RedisEndpoint {
  std::string host;
  int port = 6379;
  std::string text() const { return host + ":" + std::to_string(port); }
  bool operator==(const RedisEndpoint&) const = default;
};

// What prepare_commit waits for before the round's output may commit.
enum class Durability { none, aof_always, replicas };

// AUTH on connect (a server with requirepass or ACL users): empty password = none.
struct RedisAuth {
  std::string username;  // empty: the default user
  std::string password;
  bool operator==(const RedisAuth&) const = default;
};

// TLS to every shard (`tls: true`); files are PEM. Empty ca_file: the system's CAs.
struct RedisTls {
  bool enabled = false;
  std::string ca_file;
  std::string cert_file;    // a client certificate, for servers with tls-auth-clients
  std::string key_file;     // its key (unencrypted)
  std::string server_name;  // the name the certificate must carry; empty: the shard's host
  bool operator==(const RedisTls&) const = default;
};

struct RedisSettings {
  IdSpec id;
  std::vector<RedisEndpoint> shards;           // the current layout
  std::vector<RedisEndpoint> previous_shards;  // the layout before `cutover_ms`, may be empty
  int64_t cutover_ms = 0;                      // unix ms; 0 when there is no previous layout
  int64_t cutover_grace_ms = 60000;            // largest clock/reload skew between hosts
  int64_t window_ms = 0;                       // retention.max.age
  int64_t bucket_span_ms = 0;                  // one time slot of buckets
  int64_t bucket_slices = 1024;                // hashes per time slot
  RedisAuth auth;                              // username / password for AUTH
  RedisTls tls;
  std::string key_prefix;                      // empty: derived from pipeline and stage
  uint32_t fingerprint_bytes = 4;
  ConflictPolicy on_conflict = ConflictPolicy::duplicate;
  Durability durability = Durability::none;
  int64_t durability_replicas = 1;
  int64_t durability_timeout_ms = 5000;
  int64_t timeout_ms = 5000;

  static RedisSettings parse(const sdk::Config& c);
  // Time slots a lookup consults so that a claim is found for at least the window.
  int64_t slots_to_consult() const { return (window_ms + bucket_span_ms - 1) / bucket_span_ms + 1; }
  // After this time no claim of the previous layout can be alive: it is retired.
  int64_t previous_retired_at_ms() const {
    return cutover_ms + cutover_grace_ms + window_ms + bucket_span_ms;
  }
};

// "host:port" (port 1-65535); throws ConfigError naming `key`.
RedisEndpoint parse_endpoint(const std::string& key, const std::string& text);
// "2026-11-23T12:30:00Z" (UTC) or unix milliseconds; throws ConfigError naming `key`.
int64_t parse_instant_ms(const std::string& key, const std::string& text);

}  // namespace exactly::dedupe
