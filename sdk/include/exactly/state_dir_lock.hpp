// An exclusive claim on a state directory for as long as the object lives, so that two
// processes (or two pipelines of one process) pointed at the same directory get a clear
// error naming the holder instead of corrupting each other's state. flock() locks are
// released by the kernel when the holder dies, so a kill -9 never leaves a stale lock.
// The directory itself is locked as well as the file that names the holder: a lock file
// deleted by hand (QA did) let the next process make a new one and lock that, beside
// the live holder; the directory cannot be deleted while it holds the state.
#pragma once

#include <exactly/sdk.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <string>

namespace exactly::sdk {

class StateDirLock {
 public:
  StateDirLock() = default;
  StateDirLock(const StateDirLock&) = delete;
  StateDirLock& operator=(const StateDirLock&) = delete;
  ~StateDirLock() { release(); }

  // `what` names the holder in messages, e.g. "pipeline 'events' dedupe stage". Holders
  // in this process with the same `what` share the lock: the instances of one stage
  // that a pipeline runs on several threads (`threads:`) use one directory.
  Status acquire(const std::string& dir, const std::string& file, const std::string& what) {
    release();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::fatal("cannot create state directory " + dir + ": " + ec.message());
    std::string path = (std::filesystem::path(dir) / file).string();
    Registry& r = registry();
    std::lock_guard<std::mutex> g(r.mu);
    auto held = r.held.find(path);
    if (held != r.held.end()) {
      if (held->second.what != what)
        return Status::fatal("state directory " + dir + " is in use by " + held->second.what +
                             " (pid " + std::to_string(::getpid()) +
                             "); every host (and every pipeline) needs its own state.dir");
      ++held->second.users;
      path_ = path;
      remember_dir(held->second.dir_fd);
      return Status::ok();
    }
    // Where directories cannot be flock()ed (some network filesystems), the file alone.
    int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const bool dir_taken = dir_fd >= 0 && ::flock(dir_fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int open_errno = errno;
      if (dir_fd >= 0) ::close(dir_fd);
      return Status::fatal("cannot open " + path + ": " + std::strerror(open_errno));
    }
    if (dir_taken || ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (dir_fd >= 0) ::close(dir_fd);
      char buf[256] = {0};
      ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
      std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n))
                                 : "another process (its lock file " + path + " was deleted)";
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      ::close(fd);
      return Status::fatal("state directory " + dir + " is in use by " + holder +
                           "; every host (and every pipeline) needs its own state.dir");
    }
    std::string me = what + " (pid " + std::to_string(::getpid()) + ")\n";
    if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, me.data(), me.size(), 0);
    r.held.emplace(path, Held{fd, dir_fd, what, 1});
    path_ = path;
    remember_dir(dir_fd);
    return Status::ok();
  }

  // Whether the locked directory is still the one at its path: deleted or replaced under
  // a running holder (`rm -rf` of the state dir), the lock went with it and a second
  // process could take the path (QA). Not ok then, naming the directory. One stat().
  Status still_held() const {
    if (path_.empty()) return Status::ok();
    if (!locked_dir_) return Status::ok();
    const std::string dir = std::filesystem::path(path_).parent_path().string();
    struct stat now {};
    if (::stat(dir.c_str(), &now) == 0 && now.st_dev == locked_dir_->first && now.st_ino == locked_dir_->second)
      return Status::ok();
    return Status::fatal("state directory " + dir + " was deleted or replaced while it was in use (its "
                         "lock went with it): the state in it is gone, and another process could take "
                         "the path");
  }

  void release() {
    if (path_.empty()) return;
    Registry& r = registry();
    std::lock_guard<std::mutex> g(r.mu);
    auto held = r.held.find(path_);
    if (held != r.held.end() && --held->second.users == 0) {
      ::close(held->second.fd);
      if (held->second.dir_fd >= 0) ::close(held->second.dir_fd);
      r.held.erase(held);
    }
    path_.clear();
    locked_dir_.reset();
  }

 private:
  // The locked directory's identity, read once: still_held() compares the path with it.
  void remember_dir(int dir_fd) {
    struct stat st {};
    if (dir_fd >= 0 && ::fstat(dir_fd, &st) == 0) locked_dir_.emplace(st.st_dev, st.st_ino);
  }
  struct Held {
    int fd;
    int dir_fd;  // -1 where the directory could not be opened
    std::string what;
    int users;
  };
  struct Registry {
    std::mutex mu;
    std::map<std::string, Held> held;
  };
  static Registry& registry() {
    static Registry* r = new Registry;  // never destroyed: locks may be released at exit
    return *r;
  }
  std::string path_;
  std::optional<std::pair<dev_t, ino_t>> locked_dir_;
};

}  // namespace exactly::sdk
