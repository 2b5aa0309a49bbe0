// Physically drops evicted claims when RocksDB compacts them. Eviction itself is
// logical and immediate (the store's floor rises in the round's WriteBatch and lookups
// ignore claims below it), so the main column family never gets a point tombstone per
// evicted id, and eviction never reads the ids it evicts.
#pragma once

#include <rocksdb/compaction_filter.h>

#include <atomic>
#include <cstdint>

#include "claim_codec.hpp"

namespace exactly::dedupe {

class EvictionFilter final : public rocksdb::CompactionFilter {
 public:
  // Only a floor that is already durable may be published here: a crash must never
  // find claims gone that the store's meta still counts as live.
  void publish_floor(uint64_t floor) { floor_.store(floor, std::memory_order_release); }

  bool Filter(int, const rocksdb::Slice&, const rocksdb::Slice& value, std::string*,
              bool*) const override {
    uint64_t seq = 0;
    if (!decode_claim_seq(std::string_view(value.data(), value.size()), seq)) return false;
    return seq < floor_.load(std::memory_order_acquire);
  }
  const char* Name() const override { return "exactly.dedupe.EvictionFilter"; }

 private:
  std::atomic<uint64_t> floor_{0};
};

}  // namespace exactly::dedupe
