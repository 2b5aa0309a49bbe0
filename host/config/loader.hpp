#pragma once
// Reads pipeline YAML files (or directories of them) into a validated HostSpec.
// Every problem becomes a Diagnostic that names file:line:col and the key; nothing
// partial is returned as valid.
#include "config/host_schema.hpp"  // the host's own keys, for callers listing them
#include "config/model.hpp"
#include "plugin/loader.hpp"

#include <string>
#include <vector>

namespace exactly::config {

struct LoadResult {
  HostSpec spec;
  std::vector<Diagnostic> errors;
  bool ok() const { return errors.empty(); }
};

// A file a directory contributes: *.yaml / *.yml, not hidden, not a *.test.yaml of
// `exactly test`.
bool is_pipeline_file_name(const std::string& name);
// Expands directories (their pipeline files, sorted, not recursive) into files.
std::vector<std::string> expand_paths(const std::vector<std::string>& paths,
                                      std::vector<Diagnostic>* errors);

// Parses and validates. Scans plugin.path (from the files, then the default path)
// into `registry` so components can be checked against their schemas.
LoadResult load(const std::vector<std::string>& paths, plugin::Registry& registry);

}  // namespace exactly::config
