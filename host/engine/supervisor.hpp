#pragma once
// Owns the running pipelines. apply() takes a new validated HostSpec and changes
// only what differs: unchanged pipelines are not touched, removed ones drain and
// stop, changed ones drain and restart with the new config, added ones start.
#include "config/model.hpp"
#include "engine/pipeline.hpp"
#include "metrics/registry.hpp"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace exactly::engine {

struct ApplyReport {
  std::vector<std::string> added, removed, restarted, reconfigured, unchanged;
  // A stop was asked for while the reload drained: every pipeline was told to stop and
  // none was started.
  bool interrupted = false;
  std::string str() const;
};

// Series of pipelines a reload removed (their live series are dropped), by name.
using GoneCounters = std::map<std::string, std::vector<metrics::Registry::Series>>;

class Supervisor {
 public:
  ~Supervisor();
  // `stop_asked` is polled while apply() waits (for a reconfigure, for drains); once it
  // says true, apply() stops waiting for reconfigures, asks every pipeline to stop,
  // lets the draining ones finish and starts nothing.
  ApplyReport apply(const config::HostSpec& spec, const std::function<bool()>& stop_asked = {});
  void request_stop_all();
  // From any thread (the stop-signal thread), also while apply() runs on another: every
  // pipeline running now, and any apply() starts later, is asked to stop.
  void request_stop_all_from_any_thread();
  void join_all();
  // One whose input ended and only its plugins' destroy() is left does not count: the
  // host's end then holds that close to shutdown.timeout (a hung destroy() kept a bounded
  // run alive for good).
  bool any_running() const;
  bool any_failed() const;
  // Running and retired (stopped by a reload) pipelines, for the summary.
  std::vector<const Pipeline*> all() const;
  // The summary of all(), with the counters of pipelines a reload removed.
  std::string summary() const;
  // The same from another thread (a stop past shutdown.timeout, about to exit 3), or
  // nothing while apply() changes the lists (a reload under way).
  std::optional<std::string> summary_from_any_thread() const;
  const Pipeline* find(const std::string& name) const;

 private:
  // The pipelines that may be running, for request_stop_all_from_any_thread(): live_ and
  // those a running apply() drains (all alive while listed here).
  void publish_stoppable(const std::vector<Pipeline*>& now);
  void add_stoppable(Pipeline* p);

  std::vector<std::unique_ptr<Pipeline>> live_;
  std::vector<std::unique_ptr<Pipeline>> retired_;
  // Held by apply() while it rebuilds live_ and retired_ (only the main thread changes them).
  mutable std::timed_mutex lists_mu_;
  GoneCounters gone_counters_;
  std::mutex stop_mu_;
  bool stop_all_ = false;
  std::vector<Pipeline*> stoppable_;
};

// The human summary printed when `exactly run` ends.
std::string render_summary(const std::vector<const Pipeline*>& pipelines, const GoneCounters& gone = {});

}  // namespace exactly::engine
