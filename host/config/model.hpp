#pragma once
// The validated configuration: what `exactly run` builds pipelines from. Every value
// keeps the place it came from so that late errors (a plugin refusing a setting at
// create time) can still name file:line:col.
#include <exactly/plugin_abi.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace exactly::plugin {
struct Component;
class Library;
}  // namespace exactly::plugin

namespace exactly::config {

struct Mark {
  std::string file;
  int line = 0;  // 1-based; 0 = unknown
  int col = 0;
  std::string str() const;
};

struct Diagnostic {
  Mark mark;
  std::string message;
  // Secrets (util/secrets.hpp) masked: an error may quote the value it is about.
  std::string str() const;
};

struct ComponentSpec {
  std::string where;   // "source", "transforms[1]", "sink", "errors.dead-letter"
  std::string plugin;  // component name
  std::string label;   // optional user-given name (transforms)
  Mark mark;
  Mark config_mark;
  // Normalised values (defaults filled), in a stable order; lists repeat the key.
  std::vector<std::pair<std::string, std::string>> values;
  std::map<std::string, Mark> key_marks;
  const plugin::Component* component = nullptr;
  std::shared_ptr<plugin::Library> library;

  // Where a key was written (or the config block if it was defaulted).
  Mark mark_of(const std::string& key) const;
  std::string fingerprint() const;  // plugin + values: equal means "same component"
};

enum class Delivery { at_least_once, exactly_once };
enum class ErrorPolicy { stop, skip, dead_letter };

struct PipelineSpec {
  std::string name;
  std::string file;
  Mark mark;
  Delivery delivery = Delivery::at_least_once;
  ComponentSpec source;
  std::vector<ComponentSpec> transforms;
  ComponentSpec sink;
  int64_t commit_interval_ms = 1000;
  int64_t commit_max_records = 100000;
  int64_t commit_after_takeover_ms = 2000;
  bool commit_when_idle = true;
  // How long a commit may run with /readyz still 200 (0 = no limit).
  int64_t ready_commit_timeout_ms = 10000;
  // Tasks the pipeline's partitions are split into, each with its own transform
  // instances on its own thread (0 in the YAML = the machine's cores).
  int64_t threads = 1;
  ErrorPolicy error_policy = ErrorPolicy::stop;
  std::optional<ComponentSpec> dead_letter;
  int64_t backoff_initial_ms = 1000;
  int64_t backoff_max_ms = 60000;
  int64_t max_consecutive_aborts = 10;

  std::string fingerprint() const;
};

struct HostSpec {
  std::vector<std::string> files;        // every YAML file read, in order
  std::vector<std::string> plugin_path;  // resolved directories
  std::string metrics_listen;            // "" = off
  Mark metrics_mark;
  int64_t stage_timeout_ms = 60000;      // 0 = never reported
  Mark stage_timeout_mark;
  int64_t shutdown_timeout_ms = 60000;
  Mark shutdown_timeout_mark;
  std::vector<PipelineSpec> pipelines;
};

const char* to_string(Delivery d);
const char* to_string(ErrorPolicy p);

}  // namespace exactly::config
