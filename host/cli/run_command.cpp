#include "cli/commands.hpp"
#include "cli/stop_signals.hpp"
#include "config/loader.hpp"
#include "config/watcher.hpp"
#include "engine/fatal_signal.hpp"
#include "engine/plugin_call.hpp"
#include "engine/stage_watchdog.hpp"
#include "engine/supervisor.hpp"
#include "engine/unexpected_exit.hpp"
#include "metrics/http_server.hpp"
#include "metrics/registry.hpp"
#include "util/log.hpp"
#include "util/log_output.hpp"
#include "util/secrets.hpp"

#include <exactly/plugin_abi.h>

#include <atomic>
#include <csignal>
#include <thread>
#include <cstdio>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <unistd.h>

namespace exactly::cli {
namespace {

// As `validate` prints them; with --log-format json, as log entries, so that a log
// shipper reading JSON lines gets the one error an operator most needs to find.
void print_errors(const config::LoadResult& r) {
  if (log::format() == log::Format::json) {
    for (auto& d : r.errors) log::error("config", "{}", d.str());
    log::error("config", "{} error(s); nothing started", r.errors.size());
    return;
  }
  for (auto& d : r.errors) std::fprintf(stderr, "%s\n", d.str().c_str());
  std::fprintf(stderr, "%zu error(s); nothing started\n", r.errors.size());
}

void describe_metrics() {
  auto& m = metrics::global();
  m.describe("config_reloads_total", metrics::Type::counter,
             "Config reloads by result (ok, failed)");
  m.describe("config_last_reload_success", metrics::Type::gauge,
             "1 if the last reload was valid and applied");
  m.describe("plugin_load_failures", metrics::Type::gauge,
             "Libraries on plugin.path that could not be loaded");
  m.describe("build_info", metrics::Type::gauge,
             "1, labelled with the host's version and the plugin ABI it speaks");
  metrics::global().set("build_info",
        {{"version", EXACTLY_VERSION},
         {"abi", std::to_string(EX_ABI_VERSION_MAJOR) + "." + std::to_string(EX_ABI_VERSION_MINOR)}},
        1);
}

// One reload: validate everything first; apply only a valid set. `stop_asked` is
// polled while the reload drains (see Supervisor::apply).
// Host settings a reload does not re-read, as they were at start; shutdown.timeout is
// taken from each applied reload.
struct HostSettings {
  std::string metrics_listen;
  int64_t stage_timeout_ms = 0;
  int64_t shutdown_timeout_ms = 0;
};

// An edit to a setting that only a restart applies is said, not silently ignored.
void warn_restart_only(const config::HostSpec& next, const HostSettings& live) {
  if (next.metrics_listen != live.metrics_listen)
    log::warn("reload", "{}metrics.listen changed from '{}' to '{}': the metrics address is "
                        "bound once, at start; it changes when the host restarts",
              next.metrics_mark.line > 0 ? next.metrics_mark.str() + ": " : "",
              live.metrics_listen, next.metrics_listen);
  if (next.stage_timeout_ms != live.stage_timeout_ms)
    log::warn("reload", "stage.timeout changed from {} ms to {} ms: it is read once, at start; "
                        "it changes when the host restarts",
              live.stage_timeout_ms, next.stage_timeout_ms);
}

bool reload(const std::vector<std::string>& paths, engine::Supervisor& sup, const char* why,
            const std::function<bool()>& stop_asked, HostSettings& live) {
  plugin::Registry registry;
  auto r = config::load(paths, registry);
  metrics::global().set("plugin_load_failures", {}, static_cast<double>(registry.failures().size()));
  // As at start: a library added since (one that shadows a component, say) was skipped silently.
  for (auto& f : registry.failures()) log::warn("plugins", "skipped {}: {}", f.path, f.reason);
  if (!r.ok()) {
    for (auto& d : r.errors) log::error("reload", "{}", d.str());
    log::error("reload", "{}: rejected ({} error(s)); running pipelines are unchanged", why,
               r.errors.size());
    metrics::global().add("config_reloads_total", {{"result", "failed"}}, 1);
    metrics::global().set("config_last_reload_success", {}, 0);
    return false;
  }
  log::info("reload", "{}: valid; applying (pipelines that go or change are drained first)", why);
  warn_restart_only(r.spec, live);
  live.shutdown_timeout_ms = r.spec.shutdown_timeout_ms;
  auto rep = sup.apply(r.spec, stop_asked);
  if (rep.interrupted) {
    log::info("reload", "{}: interrupted by a stop signal: every pipeline is stopping and none "
                        "was started (the edit takes effect on the next start)", why);
    return false;
  }
  log::info("reload", "{}: applied: {}", why, rep.str());
  metrics::global().add("config_reloads_total", {{"result", "ok"}}, 1);
  metrics::global().set("config_last_reload_success", {}, 1);
  return true;
}

// The summary's table so far, on stdout where the end's goes; a reload holding the
// pipelines' lists makes it wait (at most 200 ms) and say so.
void print_status(const engine::Supervisor& sup, int sig) {
  const char* name = sig == SIGUSR1 ? "SIGUSR1" : "SIGUSR2";
  auto s = sup.summary_from_any_thread();
  if (!s) {
    log::info("host", "{}: no status now: a reload is changing the pipelines", name);
    return;
  }
  log::info("host", "{}: status so far (the host goes on running)", name);
  std::fprintf(stdout, "\n%s", secrets::scrub(*s).c_str());
  std::fflush(stdout);
}

}  // namespace

int cmd_run(const RunOptions& opts) {
  const std::vector<std::string>& paths = opts.paths;
  const bool watch = opts.watch;
  if (paths.empty()) {
    std::fprintf(stderr, "exactly run: give at least one file or directory\n");
    return 2;
  }
  // A crash names its pipeline, stage and library on stderr before the process dies.
  engine::install_fatal_signal_report();
  // A long-running host whose log reader went away (`exactly run ... | head`, a closed
  // journal pipe) must not die of SIGPIPE mid-round: its writes fail with EPIPE instead
  // and the log is lost, not the round. Sockets (metrics, plugins) get EPIPE the same way.
  std::signal(SIGPIPE, SIG_IGN);
  // Signals are taken synchronously: SIGHUP, SIGUSR1 and SIGUSR2 by this thread, SIGINT
  // and SIGTERM by a thread of their own (stop_signals.hpp); every other thread inherits
  // the blocked mask. SIGUSR1/2 print the counts so far (as dd does): their default action
  // ends the process, and log rotation scripts send them to daemons (QA: a stray SIGUSR1
  // killed the host mid-round).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  sigset_t main_signals;
  sigemptyset(&main_signals);
  sigaddset(&main_signals, SIGHUP);
  sigaddset(&main_signals, SIGUSR1);
  sigaddset(&main_signals, SIGUSR2);
  // Before the config loads: a plugin's validate() may hang the load itself.
  StopSignals stop(config::HostSpec{}.shutdown_timeout_ms);
  describe_metrics();

  plugin::Registry registry;
  // Names a plugin that hangs the first load (a library's descriptor, a validate()): at
  // the file's stage.timeout once the host's keys are read, before any library opens.
  auto first_load_watchdog = std::make_unique<engine::StageWatchdog>(config::HostSpec{}.stage_timeout_ms);
  auto loaded = config::load(paths, registry, [&](const config::HostSpec& keys) {
    first_load_watchdog = std::make_unique<engine::StageWatchdog>(keys.stage_timeout_ms);
    stop.set_shutdown_timeout(keys.shutdown_timeout_ms);
  });
  first_load_watchdog.reset();
  // Said also when the config is refused: a library that did not load is often why a
  // plugin is "unknown".
  for (auto& f : registry.failures()) log::warn("plugins", "skipped {}: {}", f.path, f.reason);
  if (!loaded.ok()) {
    print_errors(loaded);
    return 2;
  }
  metrics::global().set("plugin_load_failures", {}, static_cast<double>(registry.failures().size()));

  // The metrics address is read once: changing it needs a restart of the host.
  metrics::HttpServer http;
  if (!loaded.spec.metrics_listen.empty()) {
    std::string why;
    if (!http.start(loaded.spec.metrics_listen, &why)) {
      std::fprintf(stderr, "%s: error: metrics.listen: %s\n", loaded.spec.metrics_mark.str().c_str(),
                   why.c_str());
      // Not 2 (an invalid configuration, which a supervisor does not restart): a port
      // still held by a process on its way out is free a few seconds later.
      return 1;
    }
    // The port actually bound (a configured port 0 means "any free one").
    std::string host = loaded.spec.metrics_listen.substr(0, loaded.spec.metrics_listen.rfind(':') == std::string::npos
                                                                ? 0
                                                                : loaded.spec.metrics_listen.rfind(':'));
    log::info("host", "metrics on http://{}:{}/metrics", host.empty() ? "127.0.0.1" : host, http.port());
  }

  std::unique_ptr<config::Watcher> watcher;
  if (watch) watcher = std::make_unique<config::Watcher>(paths);

  engine::StageWatchdog watchdog(loaded.spec.stage_timeout_ms);
  HostSettings live{loaded.spec.metrics_listen, loaded.spec.stage_timeout_ms,
                    loaded.spec.shutdown_timeout_ms};
  stop.set_shutdown_timeout(live.shutdown_timeout_ms);
  engine::Supervisor sup;
  // A stop signal reaches the pipelines from the signal thread: the main thread may be in
  // a reload's validate() (a plugin's, that may take long), where it reads no signal, and
  // the running pipelines would go on committing until shutdown.timeout.
  stop.on_first_signal([&sup] { sup.request_stop_all_from_any_thread(); });
  // Exit 3 skips the normal end: the counts so far still tell the operator what moved (the
  // stuck pipelines' last rounds are not in them: they were not committed).
  stop.on_give_up([&sup] {
    if (auto s = sup.summary_from_any_thread())
      std::fprintf(stdout, "\n%s", secrets::scrub(*s).c_str());
    else
      log::error("host", "no summary: a reload was changing the pipelines");
  });
  // A signal during the first load's validate(): nothing is started.
  if (stop.requested()) {
    log::info("host", "stopped before any pipeline started");
    std::fflush(nullptr);
    std::_Exit(0);
  }
  // From here on only _Exit ends the host: an exit() is a plugin's, reported (code 4).
  engine::install_unexpected_exit_report(
      "its running rounds are not committed (the next start replays them)");
  auto rep = sup.apply(loaded.spec);
  stop.pipelines_started();
  log::info("host", "started {} pipeline(s) from {} file(s){}", rep.added.size(),
            loaded.spec.files.size(), watch ? "; watching them for changes" : "");

  bool stopping = false;
  // Runs while any pipeline runs; a reload that starts new ones keeps it going. Once a
  // reload has been applied the host is being operated by editing its files: a pipeline
  // that an edit made fail (a topic that does not exist) keeps it watching, so that the
  // fixing edit reaches it instead of the host exiting under the operator.
  bool edited = false;
  bool said_waiting = false;
  auto keep_running = [&] {
    if (sup.any_running()) {
      said_waiting = false;
      return true;
    }
    if (!(watcher && edited && !stopping && sup.any_failed())) return false;
    if (!said_waiting)
      log::warn("host", "no pipeline is running and one has failed since the last reload: still "
                        "watching the files (edit, touch or SIGHUP to retry; SIGTERM to exit)");
    said_waiting = true;
    return true;
  };
  // While a reload drains, the main loop is not listening: a stop signal then must
  // still stop the host (and not after the reload has started the new instances).
  // SIGHUP stays pending for the main loop.
  auto stop_asked = [&] { return stop.requested(); };
  auto reload_now = [&](const char* why) {
    edited = reload(paths, sup, why, stop_asked, live) || edited;
    stop.set_shutdown_timeout(live.shutdown_timeout_ms);
  };
  while (keep_running()) {
    if (stop.requested() && !stopping) {
      stopping = true;
      sup.request_stop_all();
    }
    timespec zero{0, 0};
    for (int sig; (sig = sigtimedwait(&main_signals, nullptr, &zero)) > 0;) {
      if (sig == SIGHUP && !stopping) reload_now("SIGHUP");
      if (sig == SIGUSR1 || sig == SIGUSR2) print_status(sup, sig);
    }
    if (watcher && !stopping) {
      if (watcher->poll(std::chrono::milliseconds(200)) && !stop.requested()) reload_now("files changed");
    } else {
      usleep(200 * 1000);
    }
  }
  // Tearing down (consumers leaving their groups, plugins closing) can take seconds; the
  // stop-signal thread holds it to shutdown.timeout, and a second signal exits at once.
  stop.closing();
  plugin::keep_libraries_loaded();
  sup.join_all();
  std::fprintf(stdout, "\n%s", secrets::scrub(sup.summary()).c_str());
  // Everything is closed: pipelines joined, plugins destroyed, output committed. The
  // process ends here, without exit-time destructors: a thread a plugin did not stop may
  // still run in a library that those would finalize under it.
  const int code = sup.any_failed() ? 1 : 0;
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace exactly::cli
