// Opens a closed store's RocksDB read-only, to look at what the plugin left on disk.
#pragma once

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <vector>

namespace dedupe_test {

// Calls `look(db, claims, seq)` with the store's two column families; fails the test
// (and skips `look`) when the store cannot be opened.
template <typename Look>
void look_at_closed_store(const std::filesystem::path& store, Look&& look) {
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {"seq", rocksdb::ColumnFamilyOptions()}};
  std::vector<rocksdb::ColumnFamilyHandle*> h;
  rocksdb::DB* db = nullptr;
  auto st = rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), store.string(), cfs, &h, &db);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!st.ok()) return;
  look(*db, h[0], h[1]);
  for (auto* x : h) db->DestroyColumnFamilyHandle(x);
  delete db;
}

}  // namespace dedupe_test
