#include "config/watcher.hpp"

#include "config/loader.hpp"

#include "util/log.hpp"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace exactly::config {
namespace fs = std::filesystem;

Watcher::Watcher(const std::vector<std::string>& paths, std::chrono::milliseconds debounce)
    : debounce_(debounce) {
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) {
    log::warn("reload", "inotify unavailable; only SIGHUP reloads");
    return;
  }
  std::set<std::string> watched;
  for (auto& p : paths) {
    std::error_code ec;
    fs::path abs = fs::absolute(p, ec).lexically_normal();
    std::string dir;
    if (fs::is_directory(abs, ec)) {
      dir = abs.string();
      dirs_.insert(dir);
    } else {
      dir = abs.parent_path().string();
      files_.insert(abs.string());
    }
    if (!watched.insert(dir).second) continue;
    int wd = inotify_add_watch(fd_, dir.c_str(),
                               IN_CLOSE_WRITE | IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_TO |
                                   IN_MOVED_FROM | IN_ATTRIB);
    if (wd < 0)
      log::warn("reload", "cannot watch {}: {}", dir, std::strerror(errno));
    else
      watches_.emplace_back(wd, dir);
  }
}

Watcher::~Watcher() {
  if (fd_ >= 0) close(fd_);
}

bool Watcher::relevant(const std::string& dir, const std::string& name) const {
  if (name.empty() || name[0] == '.') return false;  // editor temp files, .swp
  std::string full = (fs::path(dir) / name).lexically_normal().string();
  if (files_.count(full)) return true;
  if (!dirs_.count(dir)) return false;
  return is_pipeline_file_name(name);
}

bool Watcher::poll(std::chrono::milliseconds timeout) {
  if (fd_ < 0) {
    usleep(static_cast<useconds_t>(timeout.count()) * 1000);
    return false;
  }
  pollfd p{fd_, POLLIN, 0};
  int wait = static_cast<int>(timeout.count());
  if (pending_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        last_event_ + debounce_ - std::chrono::steady_clock::now());
    wait = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(wait, left.count())));
  }
  if (::poll(&p, 1, wait) > 0) {
    alignas(inotify_event) char buf[16384];
    for (;;) {
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      for (char* ptr = buf; ptr < buf + n;) {
        auto* ev = reinterpret_cast<inotify_event*>(ptr);
        ptr += sizeof(inotify_event) + ev->len;
        std::string dir;
        for (auto& [wd, d] : watches_)
          if (wd == ev->wd) dir = d;
        if (ev->len > 0 && relevant(dir, ev->name)) {
          pending_ = true;
          last_event_ = std::chrono::steady_clock::now();
        }
      }
    }
  }
  if (pending_ && std::chrono::steady_clock::now() >= last_event_ + debounce_) {
    pending_ = false;
    return true;
  }
  return false;
}

}  // namespace exactly::config
