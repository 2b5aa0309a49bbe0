// In front of a store's lookups: a new id (99%+ of records in a dedupe stream) costs one
// probe of this in-memory filter instead of a probe of every folded file's filter. It
// holds the hash of every key folded into the store's files and never forgets one (an
// evicted key only costs a wasted lookup), so "absent" is exact and correctness never
// depends on it.
//
// Blocked Bloom filter: one 512-bit block (a cache line) per probe, 8 bits set per key
// in its block, 16 bits of filter per key: about 0.2% false positives per full layer.
// 10 bits gave 1.2%, and each false positive is a lookup through every folded file's
// filter, which at 100M keys cost more than the extra memory saves
// (docs/benchmarks.md). It grows by layers (each twice the previous capacity) instead
// of rehashing, since the keys themselves are not at hand; the store rebuilds it in one
// layer when there are more than five (PartitionStore::finish_fold).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "huge_pages.hpp"

namespace exactly::dedupe {

class PresenceFilter {
 public:
  // At least 512K keys (1 MiB): a store that starts empty then reaches 30M keys in six
  // layers before the first rebuild (a rebuild reads the whole store).
  explicit PresenceFilter(uint64_t expected_keys = 0) { add_layer(std::max<uint64_t>(expected_keys, 1u << 19)); }

  void add(uint64_t hash) {
    Layer* l = &layers_.back();
    if (l->count >= l->capacity) {
      add_layer(l->capacity * 2);
      l = &layers_.back();
    }
    set_bits(l->block(hash), hash);
    ++l->count;
    ++count_;
  }

  bool may_contain(uint64_t hash) const {
    for (const Layer& l : layers_) {
      if (l.count == 0) continue;  // a first layer a fold's adds passed over (begin_adds)
      const uint64_t* block = l.block(hash);
      bool all = true;
      for_each_bit(hash, [&](unsigned bit) { all = all && (load(block[bit >> 6]) >> (bit & 63) & 1); });
      if (all) return true;
    }
    return false;
  }

  // Adds made on another thread (a fold's) while this one reads, so that a fold's
  // hundreds of thousands of cache-missing adds do not hold up a round. begin_adds(n), on
  // the reading thread while nothing else adds: the n keys go into the last layer if it
  // has room, else into a new layer that add_background fills unseen. After the adding
  // thread is joined, end_adds() (reading thread) appends that layer and the counts.
  // Until then a key may still read as absent: the caller keeps those keys findable
  // elsewhere (the folding table). Words of a visible layer change by whole-word relaxed
  // atomic stores from a single writer, so a reader sees each word before or after.
  void begin_adds(uint64_t n) {
    const Layer& last = layers_.back();
    pending_count_ = 0;
    pending_new_ = last.count + n > last.capacity;
    pending_capacity_ = std::max(last.capacity * 2, n);
  }
  void add_background(uint64_t hash) {
    if (pending_new_ && pending_.capacity == 0) pending_ = make_layer(pending_capacity_);  // its pages fault in here
    set_bits((pending_new_ ? pending_ : layers_.back()).block(hash), hash);
    ++pending_count_;
  }
  // The block add_background(hash) writes (null before the new layer exists), for the
  // caller to prefetch (add_folded_keys).
  const void* background_block(uint64_t hash) const {
    return pending_new_ ? (pending_.capacity ? pending_.block(hash) : nullptr)
                        : layers_.back().block(hash);
  }
  void end_adds() {
    if (pending_new_ && pending_.capacity != 0) layers_.push_back(std::move(pending_));
    layers_.back().count += pending_count_;
    count_ += pending_count_;
    pending_ = Layer();
    pending_new_ = false;
    pending_count_ = 0;
  }

  // Starts loading the blocks may_contain(hash) reads (one cache line per layer).
  // always_inline, or GCC drops its calls (round_claims.hpp, prefetch_claim_and_key).
  [[gnu::always_inline]] void prefetch(uint64_t hash) const {
    for (const Layer& l : layers_)
      if (l.count != 0) __builtin_prefetch(l.block(hash));
  }

  // The block add(hash) writes.
  const void* add_block(uint64_t hash) const { return layers_.back().block(hash); }

  uint64_t count() const { return count_; }  // keys added (not distinct, not live)
  size_t layers() const { return layers_.size(); }
  uint64_t bytes() const {
    uint64_t b = 0;
    for (const Layer& l : layers_) b += l.words.size() * 8;
    return b;
  }

 private:
  static constexpr unsigned kBitsPerKey = 16;
  static constexpr unsigned kProbes = 8;

  struct Layer {
    HugeVector<uint64_t> words;  // 8 per block
    uint64_t blocks = 0;
    uint64_t capacity = 0;
    uint64_t count = 0;
    uint64_t* block(uint64_t h) {
      return words.data() + 8 * static_cast<uint64_t>((static_cast<unsigned __int128>(h >> 32) * blocks) >> 32);
    }
    const uint64_t* block(uint64_t h) const {
      return words.data() + 8 * static_cast<uint64_t>((static_cast<unsigned __int128>(h >> 32) * blocks) >> 32);
    }
  };

  // atomic_ref of a const object is C++26; the load does not write.
  static uint64_t load(const uint64_t& w) {
    return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(w)).load(std::memory_order_relaxed);
  }
  static void set_bits(uint64_t* block, uint64_t hash) {
    for_each_bit(hash, [&](unsigned bit) {
      std::atomic_ref<uint64_t> w(block[bit >> 6]);
      w.store(w.load(std::memory_order_relaxed) | uint64_t{1} << (bit & 63), std::memory_order_relaxed);
    });
  }

  template <typename F>
  static void for_each_bit(uint64_t hash, F&& f) {
    // Bits from the other half of the hash than the block (double hashing).
    uint32_t a = static_cast<uint32_t>(hash);
    uint32_t b = static_cast<uint32_t>((hash * 0x9E3779B97F4A7C15ull) >> 32) | 1u;
    for (unsigned i = 0; i < kProbes; ++i) f((a + i * b) & 511u);
  }

  static Layer make_layer(uint64_t capacity) {
    Layer l;
    l.capacity = capacity;
    l.blocks = std::max<uint64_t>(1, (capacity * kBitsPerKey + 511) / 512);
    l.words.assign(l.blocks * 8, 0);
    return l;
  }
  void add_layer(uint64_t capacity) { layers_.push_back(make_layer(capacity)); }

  std::vector<Layer> layers_;
  uint64_t count_ = 0;
  // Between begin_adds and end_adds: the adding thread's own.
  Layer pending_;
  bool pending_new_ = false;
  uint64_t pending_capacity_ = 0;
  uint64_t pending_count_ = 0;
};

}  // namespace exactly::dedupe
