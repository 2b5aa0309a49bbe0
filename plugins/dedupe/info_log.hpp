// A store's RocksDB info log (its LOG file), written so that a failed write is dropped
// and forgotten. RocksDB's own file logger remembers the error of a full or read-only
// disk and asserts on the next line it is given (Debian's librocksdb keeps its
// assertions): a full state dir aborted the whole host as the store closed, instead of
// failing the round with the disk named.
#pragma once

#include <rocksdb/env.h>

#include <cstdarg>
#include <memory>
#include <mutex>
#include <string>

namespace exactly::dedupe {

class InfoLog final : public rocksdb::Logger {
 public:
  // Appends to <dir>/LOG; past max_bytes it becomes LOG.old (one kept) and LOG starts over.
  InfoLog(std::string dir, size_t max_bytes);
  ~InfoLog() override;

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override;
  size_t GetLogFileSize() const override;

 private:
  rocksdb::Status CloseImpl() override;
  bool open_locked();

  const std::string dir_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  int fd_ = -1;
  size_t size_ = 0;
};

std::shared_ptr<rocksdb::Logger> open_info_log(const std::string& dir, size_t max_bytes);

}  // namespace exactly::dedupe
