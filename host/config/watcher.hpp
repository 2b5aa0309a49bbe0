#pragma once
// Watches the config files and directories `exactly run` was given (inotify).
// Editors save in many ways (write in place, write-temp-and-rename, delete and
// create); watching the parent directory and filtering by name sees them all.
// A directory given whole may itself be replaced (a deploy that renames a new config
// directory into place; a Kubernetes ConfigMap volume swapping its `..data` symlink):
// its parent is watched too, and the watch follows the new directory.
// A named file's directory may be replaced the same way, or reached through a symlink a
// deploy swaps (`exactly run /app/current/p.yaml`, `current -> releases/v2` renamed into
// place): every directory on the file's path is watched for its next component, and a
// change there moves the watches below it to what the path now reaches.
// Changes are debounced so that an editor's multi-step save is read once it is done.
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace exactly::config {

class Watcher {
 public:
  explicit Watcher(const std::vector<std::string>& paths,
                   std::chrono::milliseconds debounce = std::chrono::milliseconds(300));
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;
  bool ok() const { return fd_ >= 0; }
  // Waits up to `timeout`; true once a change has settled for the debounce period.
  bool poll(std::chrono::milliseconds timeout);

 private:
  bool relevant(const std::string& dir, const std::string& name) const;
  // Adds (or, for a replaced directory, moves) the watch on `dir`; `mask_add` keeps what
  // an earlier watch of the same directory asked for.
  // `quiet`: a directory above a named file's own, which a host may not be allowed to
  // read (its own directory must be, or nothing of it is seen); failing that is only debug.
  void watch(const std::string& dir, uint32_t mask, bool quiet = false);
  void on_event(int wd, const std::string& name);
  // A named file's path, root first: each directory is watched for the next component.
  struct Chain {
    std::vector<std::string> dirs;  // "/", "/app", "/app/current" (as given, not resolved)
    std::string file;               // "/app/current/p.yaml"
  };
  void watch_chain(const Chain& c, size_t from);
  bool follow_chains(const std::string& dir, const std::string& name);
  int fd_ = -1;
  std::chrono::milliseconds debounce_;
  std::map<int, std::string> watches_;                  // wd -> directory
  std::set<std::string> files_;                         // explicitly named files
  std::set<std::string> dirs_;                          // directories given whole
  std::map<std::string, std::set<std::string>> parents_;  // parent -> directories given whole
  std::vector<Chain> chains_;
  bool pending_ = false;
  std::chrono::steady_clock::time_point last_event_{};
};

}  // namespace exactly::config
