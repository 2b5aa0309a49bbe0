#include "cli/commands.hpp"
#include "config/loader.hpp"
#include "engine/supervisor.hpp"
#include "util/log.hpp"

#include <csignal>
#include <cstdio>
#include <ctime>
#include <unistd.h>

namespace exactly::cli {

int cmd_run(const std::vector<std::string>& args) {
  std::vector<std::string> paths;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (a == "--log-level" && i + 1 < args.size()) {
      std::string l = args[++i];
      log::set_level(l == "debug" ? log::Level::debug
                     : l == "warn" ? log::Level::warn
                     : l == "error" ? log::Level::error
                                    : log::Level::info);
    } else if (a == "--help" || a == "-h") {
      print_usage();
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "exactly run: unknown option '%s'\n", a.c_str());
      return 2;
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "exactly run: give at least one file or directory\n");
    return 2;
  }
  // Signals are taken synchronously by this thread only; pipeline threads inherit
  // the blocked mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  plugin::Registry registry;
  auto loaded = config::load(paths, registry);
  if (!loaded.ok()) {
    for (auto& d : loaded.errors) std::fprintf(stderr, "%s\n", d.str().c_str());
    std::fprintf(stderr, "%zu error(s); nothing started\n", loaded.errors.size());
    return 2;
  }
  for (auto& f : registry.failures())
    log::warn("plugins", "skipped {}: {}", f.path, f.reason);

  engine::Supervisor sup;
  auto rep = sup.apply(loaded.spec);
  log::info("host", "started {} pipeline(s) from {} file(s)", rep.added.size(),
            loaded.spec.files.size());

  int signals = 0;
  while (sup.any_running()) {
    timespec ts{0, 200 * 1000 * 1000};
    int sig = sigtimedwait(&set, nullptr, &ts);
    if (sig == SIGINT || sig == SIGTERM) {
      if (++signals > 1) {
        log::error("host", "second signal: exiting without waiting for the round to commit");
        std::_Exit(130);
      }
      log::info("host", "signal {}: finishing and committing the running round", sig);
      sup.request_stop_all();
    }
  }
  sup.join_all();
  std::fprintf(stdout, "\n%s", engine::render_summary(sup.all()).c_str());
  std::fflush(stdout);
  return sup.any_failed() ? 1 : 0;
}

}  // namespace exactly::cli
