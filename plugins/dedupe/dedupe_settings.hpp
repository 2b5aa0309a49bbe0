// The dedupe transform's configuration, validated (ConfigError names the key).
#pragma once

#include <exactly/sdk.hpp>

#include <cstdint>
#include <string>

#include "id_extractor.hpp"
#include "partition_store.hpp"
#include "store_options.hpp"

namespace exactly::dedupe {

enum class ConflictPolicy { duplicate, reject, stop };
enum class BehindPolicy { fail, ignore };
enum class DamagedPolicy { restore, fail };
enum class ChangelogMode { auto_, on, off };

// id.key / id.header / id.json / id.max.bytes, shared by the RocksDB and Redis stages.
IdSpec parse_id_spec(const sdk::Config& c);

struct Settings {
  IdSpec id;
  std::string state_dir;
  ChangelogMode changelog = ChangelogMode::auto_;
  std::string changelog_topic;  // empty: derived from the pipeline and stage
  int64_t changelog_catch_up_ms = 30000;
  int64_t standby_budget_ms = 200;  // per second of pipeline time
  ConflictPolicy on_conflict = ConflictPolicy::duplicate;
  BehindPolicy on_store_behind = BehindPolicy::fail;
  DamagedPolicy on_store_damaged = DamagedPolicy::restore;
  int64_t store_behind_tolerance = 0;
  Retention retention;
  uint32_t fingerprint_bytes = 4;
  size_t block_cache_bytes = 512u << 20;
  StoreTuning tuning;

  static Settings parse(const sdk::Config& c);
};

// What reconfigure() cannot change in place.
bool same_store_layout(const Settings& a, const Settings& b, std::string& what);

// The keys a reconfigure() changes in place, each with its old and new value
// ("retention.max.keys 1000 -> 2000, standby.budget 200 ms -> 0 ms"); empty if none.
std::string in_place_changes(const Settings& before, const Settings& after);

}  // namespace exactly::dedupe
