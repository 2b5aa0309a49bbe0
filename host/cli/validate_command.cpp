#include "cli/commands.hpp"
#include "config/loader.hpp"
#include "cli/call_deadline.hpp"
#include "engine/fatal_signal.hpp"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <cstdio>

namespace exactly::cli {


int cmd_validate(const std::vector<std::string>& paths, int64_t stage_timeout_ms) {
  if (paths.empty()) {
    std::fprintf(stderr, "exactly validate: give at least one file or directory\n");
    return 2;
  }
  // A library that crashes while it loads is named, not only "exit 139".
  engine::install_fatal_signal_report();
  plugin::Registry registry;
  config::LoadResult r;
  {
    CallDeadline deadline(stage_timeout_ms, "--stage-timeout");
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
