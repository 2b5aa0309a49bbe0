#include "cli/commands.hpp"
#include "config/loader.hpp"
#include "engine/plugin_call.hpp"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <cstdio>

namespace exactly::cli {

namespace {
// A plugin's validate() that never returns must not hang a check run by CI: past the
// deadline the call still running is named and the check fails (a plugin call cannot be
// interrupted, so the process ends).
class ValidateDeadline {
 public:
  explicit ValidateDeadline(int64_t ms) : thread_([this, ms] { watch(ms); }) {}
  ~ValidateDeadline() {
    {
      std::lock_guard<std::mutex> g(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void watch(int64_t ms) {
    std::unique_lock<std::mutex> lk(mu_);
    if (cv_.wait_for(lk, std::chrono::milliseconds(ms), [this] { return done_; })) return;
    auto calls = engine::calls_running_longer_than(0);
    std::fprintf(stderr, "error: a plugin call did not return within %s (--stage-timeout):\n%s"
                 "nothing checked past it; exit 2\n",
                 fmt::format("{:g} s", static_cast<double>(ms) / 1000.0).c_str(),
                 calls.empty() ? "    (no plugin call is running: the configuration load itself hangs)\n"
                               : engine::describe(calls).c_str());
    std::fflush(nullptr);
    std::_Exit(2);
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};
}  // namespace

int cmd_validate(const std::vector<std::string>& paths, int64_t stage_timeout_ms) {
  if (paths.empty()) {
    std::fprintf(stderr, "exactly validate: give at least one file or directory\n");
    return 2;
  }
  plugin::Registry registry;
  config::LoadResult r;
  {
    ValidateDeadline deadline(stage_timeout_ms);
    r = config::load(paths, registry);
  }
  // Libraries on the plugin path that were not loaded, as `run` warns of them: one that
  // shadows another's component (or whose component another shadows) changes which code
  // a pipeline gets, and `ok` alone hid that.
  for (auto& f : registry.failures())
    std::fprintf(stderr, "warning: skipped %s: %s\n", f.path.c_str(), f.reason.c_str());
  if (!r.ok()) {
    for (auto& d : r.errors) std::fprintf(stderr, "%s\n", d.str().c_str());
    std::fprintf(stderr, "%zu error(s); nothing would start\n", r.errors.size());
    return 2;
  }
  for (auto& p : r.spec.pipelines) {
    std::string chain = p.source.plugin;
    for (auto& t : p.transforms) chain += " -> " + t.plugin;
    chain += " -> " + p.sink.plugin;
    std::printf("ok  %-24s %s  (%s, %s)\n", p.name.c_str(), chain.c_str(),
                config::to_string(p.delivery), p.mark.str().c_str());
  }
  std::printf("%zu pipeline(s) in %zu file(s) are valid\n", r.spec.pipelines.size(),
              r.spec.files.size());
  return 0;
}

}  // namespace exactly::cli
