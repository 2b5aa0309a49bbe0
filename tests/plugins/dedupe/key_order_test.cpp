// KeyOrder must give RocksDB's byte-wise order: the fold writes keys in it, and an SST
// writer refuses a key out of order. Large sets take the radix path, which must agree
// with a plain sort on every kind of key, not only on random ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "key_order.hpp"

namespace {

std::vector<std::string> mixed_keys(size_t n) {
  std::mt19937_64 rng(11);
  std::vector<std::string> keys;
  for (size_t i = 0; i < n; ++i) {
    std::string k;
    switch (i % 4) {
      case 0:  // a random 16-byte id
        for (int b = 0; b < 16; ++b) k.push_back(static_cast<char>(rng()));
        break;
      case 1:  // text ids sharing their first 8 bytes and more: ties on the prefix
        k = "order-00" + std::to_string(rng() % 100000);
        break;
      case 2:  // shorter than 8 bytes, some a prefix of others, bytes >= 0x80
        k = std::string(1 + rng() % 7, static_cast<char>(0x80 | (rng() & 0x7f)));
        break;
      default:  // only the top bytes differ
        k = std::string(1, static_cast<char>(rng())) + std::string(15, '\0');
    }
    keys.push_back(std::move(k));
  }
  return keys;
}

void expect_byte_order(size_t n, exactly::dedupe::KeyOrder& order) {
  auto keys = mixed_keys(n);
  const auto& got = order.sort(keys.size(), [&](size_t i) -> std::string_view { return keys[i]; });
  ASSERT_EQ(got.size(), keys.size());
  std::vector<std::string> sorted;
  for (uint32_t i : got) sorted.push_back(keys[i]);
  std::vector<std::string> expected = keys;
  std::sort(expected.begin(), expected.end());  // std::string compares bytes as unsigned
  EXPECT_EQ(sorted, expected);
  std::vector<uint32_t> seen(got.begin(), got.end());
  std::sort(seen.begin(), seen.end());
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], i) << "an index is missing or repeated";
}

void expect_byte_order(size_t n) {
  exactly::dedupe::KeyOrder order;
  expect_byte_order(n, order);
}

TEST(KeyOrder, SmallSetsSortByteWise) { expect_byte_order(1000); }

TEST(KeyOrder, LargeSetsTakeTheRadixPathAndSortByteWise) { expect_byte_order(200000); }

// A store's first fold gets arrays made ahead (prepare) that are larger than what it
// sorts; the result must not depend on them, on either path, nor on an earlier sort.
TEST(KeyOrder, PreparedArraysSortSmallerSetsByteWise) {
  exactly::dedupe::KeyOrder order;
  order.prepare(300000);
  expect_byte_order(200000, order);
  expect_byte_order(1000, order);
  expect_byte_order(250000, order);
}

TEST(KeyOrder, EntriesCarryTheirAuxValueInOrder) {
  auto keys = mixed_keys(100000);
  exactly::dedupe::KeyOrder order;
  const auto& entries = order.sort_entries(
      keys.size(), [](size_t i) { return static_cast<uint32_t>(i); },
      [&](uint32_t i) -> std::string_view { return keys[i]; }, [](uint32_t i) { return i * 3 + 1; });
  ASSERT_EQ(entries.size(), keys.size());
  for (size_t j = 0; j < entries.size(); ++j) {
    ASSERT_EQ(entries[j].aux, entries[j].index * 3 + 1);
    if (j > 0) ASSERT_LE(keys[entries[j - 1].index], keys[entries[j].index]);
  }
}

}  // namespace
