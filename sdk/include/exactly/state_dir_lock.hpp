// An exclusive claim on a state directory for as long as the object lives, so that two
// processes (or two pipelines of one process) pointed at the same directory get a clear
// error naming the holder instead of corrupting each other's state. flock() locks are
// released by the kernel when the holder dies, so a kill -9 never leaves a stale lock.
#pragma once

#include <exactly/sdk.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace exactly::sdk {

class StateDirLock {
 public:
  StateDirLock() = default;
  StateDirLock(const StateDirLock&) = delete;
  StateDirLock& operator=(const StateDirLock&) = delete;
  ~StateDirLock() { release(); }

  // `what` names the holder in messages, e.g. "pipeline 'events' dedupe stage".
  Status acquire(const std::string& dir, const std::string& file, const std::string& what) {
    release();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::fatal("cannot create state directory " + dir + ": " + ec.message());
    path_ = (std::filesystem::path(dir) / file).string();
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return Status::fatal("cannot open " + path_ + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      char buf[256] = {0};
      ssize_t n = ::pread(fd_, buf, sizeof(buf) - 1, 0);
      std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "another holder";
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      ::close(fd_);
      fd_ = -1;
      return Status::fatal("state directory " + dir + " is in use by " + holder +
                           "; every host (and every pipeline) needs its own state.dir");
    }
    std::string me = what + " (pid " + std::to_string(::getpid()) + ")\n";
    if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, me.data(), me.size(), 0);
    return Status::ok();
  }

  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace exactly::sdk
