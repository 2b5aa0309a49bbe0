#include "round_writer.hpp"

#include <pthread.h>

#include <utility>

namespace exactly::dedupe {

RoundWriter::RoundWriter(rocksdb::DB* db, const rocksdb::WriteOptions& options)
    : db_(db), options_(options) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "dedupe-write");
    run();
  });
}

RoundWriter::~RoundWriter() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

rocksdb::WriteBatch RoundWriter::take_batch() {
  std::lock_guard<std::mutex> g(mu_);
  if (spare_.empty()) return rocksdb::WriteBatch();
  rocksdb::WriteBatch b = std::move(spare_.front());
  spare_.pop_front();
  return b;
}

void RoundWriter::post(rocksdb::WriteBatch&& batch, uint64_t mark) {
  {
    std::unique_lock<std::mutex> g(mu_);
    // Bounded: a file system that stops for long stops the rounds, not the memory.
    done_.wait(g, [&] { return queue_.size() < kMaxQueued; });
    queue_.emplace_back(std::move(batch), mark);
  }
  work_.notify_one();
}

rocksdb::Status RoundWriter::drain() {
  std::unique_lock<std::mutex> g(mu_);
  done_.wait(g, [&] { return queue_.empty() && !writing_; });
  return error_;
}

rocksdb::Status RoundWriter::error() {
  std::lock_guard<std::mutex> g(mu_);
  return error_;
}

uint64_t RoundWriter::written_mark() {
  std::lock_guard<std::mutex> g(mu_);
  return written_mark_;
}

void RoundWriter::run() {
  std::unique_lock<std::mutex> g(mu_);
  for (;;) {
    work_.wait(g, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything is written
    rocksdb::WriteBatch b = std::move(queue_.front().first);
    const uint64_t mark = queue_.front().second;
    queue_.pop_front();
    writing_ = true;
    const bool skip = !error_.ok();  // after a failure nothing more is written
    g.unlock();
    rocksdb::Status st = skip ? rocksdb::Status::OK() : db_->Write(options_, &b);
    b.Clear();
    g.lock();
    if (!st.ok() && error_.ok()) error_ = st;
    if (error_.ok()) written_mark_ = mark;
    if (spare_.size() < 2) spare_.push_back(std::move(b));
    writing_ = false;
    done_.notify_all();
  }
}

}  // namespace exactly::dedupe
