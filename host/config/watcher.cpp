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

namespace {
constexpr uint32_t kContents = IN_CLOSE_WRITE | IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_TO |
                               IN_MOVED_FROM | IN_ATTRIB;
constexpr uint32_t kEntries = IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM;
}  // namespace

Watcher::Watcher(const std::vector<std::string>& paths, std::chrono::milliseconds debounce)
    : debounce_(debounce) {
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) {
    log::warn("reload", "inotify unavailable; only SIGHUP reloads");
    return;
  }
  for (auto& p : paths) {
    std::error_code ec;
    fs::path abs = fs::absolute(p, ec).lexically_normal();
    if (abs.has_filename() == false) abs = abs.parent_path();  // "conf/" -> "conf"
    if (fs::is_directory(abs, ec)) {
      dirs_.insert(abs.string());
      watch(abs.string(), kContents);
      const std::string parent = abs.parent_path().string();
      if (parent != abs.string()) {
        parents_[parent].insert(abs.string());
        watch(parent, kEntries);
      }
    } else {
      files_.insert(abs.string());
      Chain c;
      c.file = abs.string();
      for (fs::path d = abs.parent_path();; d = d.parent_path()) {
        c.dirs.insert(c.dirs.begin(), d.string());
        if (d == d.parent_path()) break;
      }
      chains_.push_back(std::move(c));
      watch_chain(chains_.back(), 0);
    }
  }
}

Watcher::~Watcher() {
  if (fd_ >= 0) close(fd_);
}

void Watcher::watch(const std::string& dir, uint32_t mask, bool quiet) {
  // IN_MASK_ADD: one directory can be both watched for its files and, as a parent, for
  // its entries; a second add must not narrow the first.
  int wd = inotify_add_watch(fd_, dir.c_str(), mask | IN_MASK_ADD);
  if (wd < 0) {
    if (quiet)
      log::debug("reload", "cannot watch {}: {}", dir, std::strerror(errno));
    else
      log::warn("reload", "cannot watch {}: {}", dir, std::strerror(errno));
    return;
  }
  // A replaced directory: drop the watch of the inode that was there (it now lives
  // elsewhere, or nowhere) before this path's new one takes its place.
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (it->second == dir && it->first != wd) {
      inotify_rm_watch(fd_, it->first);
      it = watches_.erase(it);
    } else {
      ++it;
    }
  }
  watches_[wd] = dir;
}

void Watcher::watch_chain(const Chain& c, size_t from) {
  // Watched by path: inotify resolves it, so a directory (or a symlink on the way) that
  // was replaced is watched anew where the path now leads.
  for (size_t i = from; i < c.dirs.size(); ++i)
    watch(c.dirs[i], i + 1 == c.dirs.size() ? kContents : kEntries, i + 1 < c.dirs.size());
  // A named file that is a symlink (a ConfigMap's `p.yaml -> ..data/p.yaml`, a link to
  // a file kept elsewhere): edits land on its target, in another directory.
  std::error_code ec;
  const fs::path target = fs::canonical(c.file, ec);
  if (!ec && target.string() != c.file && files_.insert(target.string()).second)
    watch(target.parent_path().string(), kContents);
}

bool Watcher::follow_chains(const std::string& dir, const std::string& name) {
  bool moved = false;
  for (const auto& c : chains_)
    for (size_t i = 0; i + 1 < c.dirs.size(); ++i)
      if (c.dirs[i] == dir && fs::path(c.dirs[i + 1]).filename() == name) {
        watch_chain(c, i + 1);
        log::info("reload", "{} was replaced: watching {} where its path now leads", c.dirs[i + 1], c.file);
        moved = true;
        break;
      }
  return moved;
}

bool Watcher::relevant(const std::string& dir, const std::string& name) const {
  // A Kubernetes ConfigMap volume updates by renaming a new `..data` symlink into place:
  // a change of a watched directory, and of every named file in it (`p.yaml` is a link
  // through `..data`).
  if (name == "..data") {
    if (dirs_.count(dir)) return true;
    for (const auto& f : files_)
      if (fs::path(f).parent_path().string() == dir) return true;
    return false;
  }
  if (name.empty() || name[0] == '.') return false;  // editor temp files, .swp
  std::string full = (fs::path(dir) / name).lexically_normal().string();
  if (files_.count(full)) return true;
  if (!dirs_.count(dir)) return false;
  return is_pipeline_file_name(name);
}

void Watcher::on_event(int wd, const std::string& name) {
  auto w = watches_.find(wd);
  if (w == watches_.end() || name.empty()) return;
  const std::string dir = w->second;
  bool changed = relevant(dir, name);
  if (follow_chains(dir, name)) changed = true;
  auto p = parents_.find(dir);
  if (p != parents_.end()) {
    const std::string child = (fs::path(dir) / name).lexically_normal().string();
    if (p->second.count(child)) {
      // The directory itself was moved in, away, created or deleted: follow the path.
      std::error_code ec;
      if (fs::is_directory(child, ec)) {
        watch(child, kContents);
        log::info("reload", "{} was replaced: watching the directory now at that path", child);
      }
      changed = true;
    }
  }
  if (changed) {
    pending_ = true;
    last_event_ = std::chrono::steady_clock::now();
  }
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
        if (ev->len > 0) on_event(ev->wd, ev->name);
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
