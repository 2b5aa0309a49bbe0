// The owner-aware dedupe transform on a shared Redis store (Tapjoy's design): same
// decisions as the RocksDB `dedupe` (new -> claim and emit; owned by this record's
// origin -> replay, emit; otherwise duplicate; different content -> conflict), but the
// claims live in Redis, so any host can check any id: partitions move between hosts
// with nothing to restore, and the window is bounded by time (whole buckets expire).
#pragma once

#include <exactly/sdk.hpp>

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "id_extractor.hpp"
#include "redis_layout.hpp"
#include "redis_settings.hpp"

namespace exactly::dedupe {

class RedisDedupeTransform final : public sdk::Transform {
 public:
  RedisDedupeTransform(sdk::Host host, const sdk::Config& config);
  // The create-time checks (RedisSettings::parse) without connecting (ABI 1.3).
  static sdk::Status validate(const sdk::Config& config);

  sdk::Status assign(const std::vector<sdk::Partition>& parts) override;
  sdk::Status revoke(const std::vector<sdk::Partition>& parts) override;
  sdk::Status process(const sdk::Batch& in, const sdk::Emitter& out) override;
  sdk::Status prepare_commit() override;
  sdk::Status reconfigure(const sdk::Config& config) override;

  // For tests and the benchmark: the time the stage believes it is (unix ms).
  static int64_t now_ms();

 private:
  struct Counts {
    uint64_t kept = 0, duplicates = 0, conflicts = 0, id_errors = 0;
  };
  struct Part {
    std::string labels;  // partition=<name>
    uint32_t tag = 0;    // the owner's partition bytes
    Counts counts;
  };
  struct Item {
    Part* part = nullptr;
    int32_t reject = -1;  // index into reasons_
    bool other = false;   // another record owns the id
    std::string stored;   // that record's claim value
  };

  void apply(RedisSettings next);
  sdk::Status decide(const sdk::Batch& in, const sdk::Emitter& out);
  void flush_counts(Part& p);

  sdk::Host host_;
  RedisSettings settings_;
  std::string prefix_;
  IdExtractor ids_;
  std::shared_ptr<const redis::TlsContext> tls_;  // null without tls
  std::unique_ptr<redis::Layout> current_;
  std::unique_ptr<redis::Layout> previous_;  // until retired
  std::unordered_map<int32_t, Part> parts_;

  // Scratch of one batch.
  std::vector<Item> items_;
  std::vector<redis::ClaimItem> claims_;
  std::vector<uint32_t> which_, survivors_;
  std::vector<std::pair<uint32_t, std::string>> others_;
  std::string keys_, fields_, values_;
  std::vector<std::string> reasons_;
};

}  // namespace exactly::dedupe
