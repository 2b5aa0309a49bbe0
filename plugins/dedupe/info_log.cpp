#include "info_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <sys/time.h>

namespace exactly::dedupe {

InfoLog::InfoLog(std::string dir, size_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {
  std::lock_guard<std::mutex> g(mu_);
  open_locked();
}

InfoLog::~InfoLog() {
  if (!closed_) (void)InfoLog::CloseImpl();
  closed_ = true;
}

rocksdb::Status InfoLog::CloseImpl() {
  std::lock_guard<std::mutex> g(mu_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  return rocksdb::Status::OK();
}

bool InfoLog::open_locked() {
  if (fd_ >= 0) return true;
  const std::string path = dir_ + "/LOG";
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) return false;
  struct stat st {};
  size_ = ::fstat(fd_, &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
  return true;
}

void InfoLog::Logv(const char* format, va_list ap) {
  char line[4096];
  timeval now{};
  ::gettimeofday(&now, nullptr);
  tm t{};
  ::localtime_r(&now.tv_sec, &t);
  int n = std::snprintf(line, sizeof line, "%04d/%02d/%02d-%02d:%02d:%02d.%06ld ", t.tm_year + 1900,
                        t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                        static_cast<long>(now.tv_usec));
  if (n < 0) return;
  va_list copy;
  va_copy(copy, ap);
  int m = std::vsnprintf(line + n, sizeof line - static_cast<size_t>(n), format, copy);
  va_end(copy);
  if (m < 0) return;
  size_t len = std::min(sizeof line - 1, static_cast<size_t>(n) + static_cast<size_t>(m));
  if (line[len - 1] != '\n') line[len++] = '\n';

  std::lock_guard<std::mutex> g(mu_);
  if (closed_) return;
  if (fd_ >= 0 && size_ + len > max_bytes_ && max_bytes_ > 0) {
    ::close(fd_);
    fd_ = -1;
    (void)std::rename((dir_ + "/LOG").c_str(), (dir_ + "/LOG.old").c_str());
    const std::string path = dir_ + "/LOG";
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_ = 0;
  }
  // A disk that was full may have room again: the file is opened anew when it is missing.
  if (!open_locked()) return;
  const ssize_t w = ::write(fd_, line, len);
  if (w > 0) size_ += static_cast<size_t>(w);
}

size_t InfoLog::GetLogFileSize() const {
  std::lock_guard<std::mutex> g(mu_);
  return size_;
}

std::shared_ptr<rocksdb::Logger> open_info_log(const std::string& dir, size_t max_bytes) {
  return std::make_shared<InfoLog>(dir, max_bytes);
}

}  // namespace exactly::dedupe
