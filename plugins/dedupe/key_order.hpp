// Byte-wise order of a set of keys, as RocksDB's default comparator sorts them. Sorting
// small (prefix, index) pairs instead of pointers to keys keeps the sort in cache;
// random ids almost never tie on their first 8 bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "huge_pages.hpp"

namespace exactly::dedupe {

class KeyOrder {
 public:
  // `key(i)` returns the i-th key as a string_view; returns 0..n-1 in key order.
  template <typename KeyFn>
  const std::vector<uint32_t>& sort(size_t n, KeyFn key) {
    return sort_ids(n, [](size_t i) { return static_cast<uint32_t>(i); }, key);
  }
  // The same over ids: `id(i)` for i in 0..n-1, `key(id)`; returns the ids in key order.
  template <typename IdFn, typename KeyFn>
  const std::vector<uint32_t>& sort_ids(size_t n, IdFn id, KeyFn key) {
    const auto& entries = sort_entries(n, id, key, [](uint32_t) { return 0u; });
    order_.resize(n);
    for (size_t i = 0; i < n; ++i) order_[i] = entries[i].index;
    return order_;
  }

  // Makes (and touches) room for sorting up to n ids, so that a first sort of that size
  // does not fault in fresh pages (sort_entries only ever grows its arrays).
  void prepare(size_t n) {
    if (entries_.size() < n) entries_.resize(n);
    if (scratch_.size() < n) scratch_.resize(n);
  }

  struct Entry {
    uint64_t prefix;
    uint32_t index;
    uint32_t aux;  // the caller's, carried along (e.g. where the key lives)
  };
  // The same, keeping `aux(id)` beside each id: a caller that walks the result can
  // prefetch what it needs from the entry without first loading the item itself.
  template <typename IdFn, typename KeyFn, typename AuxFn>
  const HugeVector<Entry>& sort_entries(size_t n, IdFn id, KeyFn key, AuxFn aux) {
    entries_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      uint32_t x = id(i);
      entries_[i] = {prefix(key(x)), x, aux(x)};
    }
    sort_entries(key);
    return entries_;
  }

 private:
  // Large sets (a fold's claims) are split by the prefix's top 16 bits first: one pass
  // to count and one to scatter, then buckets of a few dozen entries that sort in cache.
  // Keys that share their first bytes (not random ids) fall into one bucket and cost what
  // a plain sort costs.
  static constexpr size_t kRadixMin = 1u << 16;
  template <typename KeyFn>
  void sort_entries(KeyFn key) {
    auto less = [&](const Entry& a, const Entry& b) {
      if (a.prefix != b.prefix) return a.prefix < b.prefix;
      return key(a.index) < key(b.index);
    };
    const size_t n = entries_.size();
    if (n < kRadixMin) {
      std::sort(entries_.begin(), entries_.end(), less);
      return;
    }
    bucket_start_.assign((1u << 16) + 1, 0);
    for (const Entry& e : entries_) ++bucket_start_[(e.prefix >> 48) + 1];
    for (size_t b = 1; b < bucket_start_.size(); ++b) bucket_start_[b] += bucket_start_[b - 1];
    next_.assign(bucket_start_.begin(), bucket_start_.end() - 1);
    scratch_.resize(n);
    for (const Entry& e : entries_) scratch_[next_[e.prefix >> 48]++] = e;
    entries_.swap(scratch_);
    for (size_t b = 0; b + 1 < bucket_start_.size(); ++b) {
      auto first = entries_.begin() + bucket_start_[b], last = entries_.begin() + bucket_start_[b + 1];
      if (last - first > 1) std::sort(first, last, less);
    }
  }
  static uint64_t prefix(std::string_view k) {
    uint64_t p = 0;
    size_t n = k.size() < 8 ? k.size() : 8;
    for (size_t i = 0; i < n; ++i) p |= uint64_t(static_cast<uint8_t>(k[i])) << (56 - 8 * i);
    return p;
  }
  HugeVector<Entry> entries_, scratch_;
  std::vector<uint32_t> order_, bucket_start_, next_;
};

}  // namespace exactly::dedupe
