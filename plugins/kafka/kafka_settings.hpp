// The kafka source's and sink's settings, parsed and checked without a client: no
// rd_kafka_t, no connection, no state.dir, no embedded cluster. create() and validate()
// (ABI 1.3) share them, so `exactly validate` refuses what create() would. Throw
// sdk::ConfigError naming the key.
#pragma once

#include "rdkafka_common.hpp"

#include <exactly/sdk.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace exactly::kafka {

struct SourceSettings {
  std::string servers;
  std::string group;
  std::vector<std::string> topics;    // with `priority`: its topics, highest first
  std::vector<std::string> priority;  // empty: no priority levels
  double min_share = 0.05;            // priority.min.share
  size_t batch_size = 10000;
  int64_t poll_timeout_ms = 100;
  int64_t open_timeout_ms = 30000;
  int64_t stop_when_idle_ms = 0;
  int64_t stall_timeout_ms = 30000;  // fetch.stall.timeout; 0 = never checked
  std::map<std::string, std::string> user;  // rdkafka: {...}
  int standby_replicas = 0;
  bool static_membership = false;
  bool fence_departed = true;
  std::string state_dir = "./state";
  std::string not_before_header;  // empty: no not-before waits

  static SourceSettings parse(const sdk::Config& c);
};

// exactly's consumer defaults, then the user's map: what is settable by the user. The
// caller sets the rest (servers, group, forced values) afterwards.
void apply_consumer_defaults(ConfBuilder& b, const std::map<std::string, std::string>& user,
                             const std::map<std::string, std::string>& cluster = {});

struct SinkSettings {
  std::string servers;
  std::string topic, topic_from;
  enum class Partitioning { Input, Key, Default } partitioning = Partitioning::Default;
  bool eos = false;
  std::string txn_id;  // as given; empty = the default form (needs state.dir, at create)
  std::string state_dir = "./state";
  int64_t txn_timeout_ms = 10000;
  int64_t open_timeout_ms = 30000;
  std::map<std::string, std::string> user;

  static SinkSettings parse(const sdk::Config& c);
};

void apply_producer_defaults(ConfBuilder& b, const SinkSettings& s);

// What KafkaSource::validate / KafkaSink::validate check (also the fuzz targets' entry):
// the settings, then librdkafka's own check of each property on a conf that never
// becomes a client.
sdk::Status validate_source(const sdk::Config& c);
sdk::Status validate_sink(const sdk::Config& c);

// The user's map as validate() hands it to librdkafka's own property checks (on a conf
// that never becomes a client): without `plugin.library.paths`, whose setting loads the
// libraries it names; create() sets it and reports its errors.
std::map<std::string, std::string> without_plugin_libraries(std::map<std::string, std::string> user);

}  // namespace exactly::kafka
