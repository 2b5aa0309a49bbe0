// Writes a store's unsynced round batches on a thread of their own, in order.
//
// Why: with a changelog the store's round write is not synced (the changelog in the
// round's transaction is the durable copy, and a store that lost its tail is restored
// from it), yet its write() into RocksDB's WAL still ran on the pipeline thread, and a
// write() can wait on the file system: at the kernel's first writeback of a run's files
// (30 s after they were first dirtied) it waited 231-331 ms for the WAL's block-mapping
// lock while the flusher allocated its blocks (ext4_da_write_end; bpftrace of the
// D-state waits, docs/benchmarks.md "The address-space lock"), and the round, and every
// record in it, waited with it. Here the pipeline thread only queues the batch. Since
// such a store writes no WAL (PartitionStore::set_changelog_backed) a write is a memtable
// insert, which still waits when RocksDB stalls writes behind a flush.
//
// Ordering: one thread per store and a FIFO, so the store's files see its writes in the
// order the rounds made them. Whoever reads the store's sequence index or writes to it
// directly first waits for the queue (drain()), except the round's eviction walk, which
// reads the oldest chunks and drains only if it runs past what is written.
// A failed write is kept and returned by every later drain() and error(): the store is
// then broken, and the pipeline stops on it, as it did when the write failed inline (the
// round it belonged to is committed; its changelog restores the store).
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace exactly::dedupe {

class RoundWriter {
 public:
  // `options`: every batch is written with them (without a WAL for a store that rests on
  // its changelog, PartitionStore::set_changelog_backed).
  RoundWriter(rocksdb::DB* db, const rocksdb::WriteOptions& options);
  ~RoundWriter();  // writes what is queued, then ends its thread
  RoundWriter(const RoundWriter&) = delete;
  RoundWriter& operator=(const RoundWriter&) = delete;

  // A cleared batch to fill (one the thread has written, for its buffer, if any).
  rocksdb::WriteBatch take_batch();
  // Queues `batch` to be written (not synced) after every batch queued before it; waits
  // while kMaxQueued batches are queued.
  // `mark` (the store's next sequence number once it is written; never decreasing) is
  // what written_mark() returns once it and every batch before it are written.
  void post(rocksdb::WriteBatch&& batch, uint64_t mark);
  // The mark of the last batch written (0 before the first).
  uint64_t written_mark();
  // Waits until every queued batch is written; the first failure so far, if any.
  rocksdb::Status drain();
  // The first failure so far, without waiting.
  rocksdb::Status error();

 private:
  static constexpr size_t kMaxQueued = 64;  // rounds: 6.4 s at the default 100 ms
  void run();

  rocksdb::DB* db_;
  const rocksdb::WriteOptions options_;
  std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<std::pair<rocksdb::WriteBatch, uint64_t>> queue_;
  std::deque<rocksdb::WriteBatch> spare_;  // written batches, kept for their buffers
  bool writing_ = false;
  uint64_t written_mark_ = 0;
  bool stop_ = false;
  rocksdb::Status error_;
  std::thread thread_;
};

}  // namespace exactly::dedupe
