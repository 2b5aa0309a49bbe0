#pragma once
// Owns the running pipelines. apply() takes a new validated HostSpec and changes
// only what differs: unchanged pipelines are not touched, removed ones drain and
// stop, changed ones drain and restart with the new config, added ones start.
#include "config/model.hpp"
#include "engine/pipeline.hpp"

#include <functional>
#include <memory>
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

class Supervisor {
 public:
  ~Supervisor();
  // `stop_asked` is polled while apply() waits (for a reconfigure, for drains); once it
  // says true, apply() stops waiting for reconfigures, asks every pipeline to stop,
  // lets the draining ones finish and starts nothing.
  ApplyReport apply(const config::HostSpec& spec, const std::function<bool()>& stop_asked = {});
  void request_stop_all();
  void join_all();
  bool any_running() const;
  bool any_failed() const;
  // Running and retired (stopped by a reload) pipelines, for the summary.
  std::vector<const Pipeline*> all() const;
  const Pipeline* find(const std::string& name) const;

 private:
  std::vector<std::unique_ptr<Pipeline>> live_;
  std::vector<std::unique_ptr<Pipeline>> retired_;
};

// The human summary printed when `exactly run` ends.
std::string render_summary(const std::vector<const Pipeline*>& pipelines);

}  // namespace exactly::engine
