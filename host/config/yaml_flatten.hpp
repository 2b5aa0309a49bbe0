#pragma once
// Pipeline YAML as flat keys: nested maps become dotted keys ("retention.max.keys"), each
// with the file:line:col of its key and of its value, and ${...} references resolved.
// What the schema checks (schema_check.hpp) and the readers work on.
#include "config/model.hpp"

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace exactly::config {

// Where the steps of one load put the problems they find.
class ErrorSink {
 public:
  explicit ErrorSink(std::vector<Diagnostic>* out) : errors(out) {}
  std::vector<Diagnostic>* errors;
  void error(const Mark& m, std::string msg) {
    if (unresolved_.count(std::tie(m.file, m.line, m.col)) != 0) return;
    errors->push_back({m, std::move(msg)});
  }
  // A value whose ${...} reference could not be resolved: this error, and no other at its
  // place. The checks after it see the reference's own text, and each would report it
  // again as a wrong value (QA: "expects an integer, got '${file:...}'" after the error
  // that said the file was missing).
  void unresolved(const Mark& m, std::string msg) {
    errors->push_back({m, std::move(msg)});
    unresolved_.emplace(m.file, m.line, m.col);
  }

 private:
  std::set<std::tuple<std::string, int, int>> unresolved_;
};

// One leaf of a flattened YAML map: "retention.max.keys" -> node.
struct Flat {
  std::string key;
  YAML::Node value;
  Mark key_mark;
  Mark value_mark;
};

// yaml-cpp's 0-based mark as file:line:col (1-based; 0:0 when the node has none).
Mark mark_at(const std::string& file, const YAML::Mark& m);

// "a map", "a list", "nothing", "a scalar": for messages.
const char* node_kind(const YAML::Node& n);

// Flattens nested maps into dotted keys. Keys in `stop` are kept whole (their value
// is handed back as a node: sub-components, lists of transforms). A scalar's (or a
// list's scalars') ${...} references are resolved (interpolate.hpp); values of
// secret-named keys and values read from files are remembered as secrets.
void flatten(const YAML::Node& map, const std::string& prefix, const std::string& file,
             const std::set<std::string>& stop, std::vector<Flat>* out, ErrorSink& ctx);

}  // namespace exactly::config
