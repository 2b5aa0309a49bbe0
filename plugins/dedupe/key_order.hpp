// Byte-wise order of a set of keys, as RocksDB's default comparator sorts them. Sorting
// small (prefix, index) pairs instead of pointers to keys keeps the sort in cache;
// random ids almost never tie on their first 8 bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

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
    entries_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      uint32_t x = id(i);
      entries_[i] = {prefix(key(x)), x};
    }
    std::sort(entries_.begin(), entries_.end(), [&](const Entry& a, const Entry& b) {
      if (a.prefix != b.prefix) return a.prefix < b.prefix;
      return key(a.index) < key(b.index);
    });
    order_.resize(n);
    for (size_t i = 0; i < n; ++i) order_[i] = entries_[i].index;
    return order_;
  }

 private:
  struct Entry {
    uint64_t prefix;
    uint32_t index;
  };
  static uint64_t prefix(std::string_view k) {
    uint64_t p = 0;
    size_t n = k.size() < 8 ? k.size() : 8;
    for (size_t i = 0; i < n; ++i) p |= uint64_t(static_cast<uint8_t>(k[i])) << (56 - 8 * i);
    return p;
  }
  std::vector<Entry> entries_;
  std::vector<uint32_t> order_;
};

}  // namespace exactly::dedupe
