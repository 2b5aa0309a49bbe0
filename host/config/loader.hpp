#pragma once
// Reads pipeline YAML files (or directories of them) into a validated HostSpec.
// Every problem becomes a Diagnostic that names file:line:col and the key; nothing
// partial is returned as valid.
#include "config/host_schema.hpp"  // the host's own keys, for callers listing them
#include "config/model.hpp"
#include "plugin/loader.hpp"

#include <functional>
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
// `on_host_keys` sees the host's own keys (stage.timeout, shutdown.timeout) once they are
// read and before any plugin library is opened: a library that hangs while it loads is
// then held to the file's timeouts, not the defaults.
LoadResult load(const std::vector<std::string>& paths, plugin::Registry& registry,
                const std::function<void(const HostSpec&)>& on_host_keys = {});

}  // namespace exactly::config
