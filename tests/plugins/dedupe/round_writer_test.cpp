// The store's writer thread (plugins/dedupe/round_writer.hpp) against a real RocksDB:
// batches land in the order they were queued, drain() waits for them, and a failed
// write is kept, with nothing written after it.
#include "round_writer.hpp"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <memory>
#include <string>

namespace fs = std::filesystem;
using exactly::dedupe::RoundWriter;

namespace {

class RoundWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("round-writer-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_.string(), &db).ok());
    db_.reset(db);
  }
  void TearDown() override {
    db_.reset();
    fs::remove_all(dir_);
  }
  std::string get(const std::string& k) {
    std::string v;
    return db_->Get(rocksdb::ReadOptions(), k, &v).ok() ? v : "<none>";
  }
  fs::path dir_;
  std::unique_ptr<rocksdb::DB> db_;
};

TEST_F(RoundWriterTest, BatchesLandInTheOrderTheyWereQueued) {
  RoundWriter w(db_.get(), rocksdb::WriteOptions());
  for (uint64_t i = 1; i <= 300; ++i) {
    rocksdb::WriteBatch b = w.take_batch();
    ASSERT_EQ(b.Count(), 0);  // a reused batch comes back cleared
    ASSERT_TRUE(b.Put("last", std::to_string(i)).ok());
    if (i % 2 == 0) ASSERT_TRUE(b.Delete("odd").ok());
    else ASSERT_TRUE(b.Put("odd", std::to_string(i)).ok());
    w.post(std::move(b), i);
  }
  ASSERT_TRUE(w.drain().ok());
  EXPECT_EQ(w.written_mark(), 300u);
  EXPECT_EQ(get("last"), "300");
  EXPECT_EQ(get("odd"), "<none>");  // the 300th deleted what the 299th put
}

TEST_F(RoundWriterTest, WhatIsQueuedIsWrittenBeforeTheWriterEnds) {
  {
    RoundWriter w(db_.get(), rocksdb::WriteOptions());
    for (uint64_t i = 1; i <= 100; ++i) {
      rocksdb::WriteBatch b;
      ASSERT_TRUE(b.Put("k" + std::to_string(i), "v").ok());
      w.post(std::move(b), i);
    }
  }
  for (int i = 1; i <= 100; ++i) EXPECT_EQ(get("k" + std::to_string(i)), "v") << i;
}

TEST_F(RoundWriterTest, AFailedWriteIsKeptAndNothingAfterItIsWritten) {
  RoundWriter w(db_.get(), rocksdb::WriteOptions());
  rocksdb::WriteBatch first;
  ASSERT_TRUE(first.Put("a", "1").ok());
  w.post(std::move(first), 1);
  w.post(rocksdb::WriteBatch(std::string("not a batch")), 2);  // RocksDB refuses it
  rocksdb::WriteBatch after;
  ASSERT_TRUE(after.Put("b", "3").ok());
  w.post(std::move(after), 3);
  const rocksdb::Status st = w.drain();
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(w.error().ok());
  EXPECT_FALSE(w.drain().ok());  // and again
  EXPECT_EQ(w.written_mark(), 1u);
  EXPECT_EQ(get("a"), "1");
  EXPECT_EQ(get("b"), "<none>");
}

}  // namespace
