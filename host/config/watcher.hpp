#pragma once
// Watches the config files and directories `exactly run` was given (inotify).
// Editors save in many ways (write in place, write-temp-and-rename, delete and
// create); watching the parent directory and filtering by name sees them all.
// Changes are debounced so a half-written file is not read mid-save.
#include <chrono>
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
  int fd_ = -1;
  std::chrono::milliseconds debounce_;
  std::vector<std::pair<int, std::string>> watches_;  // wd -> directory
  std::set<std::string> files_;                        // explicitly named files
  std::set<std::string> dirs_;                         // directories given whole
  bool pending_ = false;
  std::chrono::steady_clock::time_point last_event_{};
};

}  // namespace exactly::config
