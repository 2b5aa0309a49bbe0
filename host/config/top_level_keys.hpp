#pragma once
// A file's top-level keys other than `pipelines`: plugin.path, plugin.insecure,
// metrics.listen, stage.timeout, shutdown.timeout. Several files form one configuration:
// their plugin paths add up, the other keys must agree where more than one sets them.
#include "config/model.hpp"
#include "config/yaml_flatten.hpp"

#include <string>
#include <vector>

namespace exactly::config {

struct PluginSettings {
  std::vector<std::string> plugin_dirs;  // absolute (relative entries are relative to their file)
  bool insecure = false;                 // plugin.insecure in any file
};

// `flat` is the file's flattened top level, `pipelines` left out.
void read_top_level(const std::vector<Flat>& flat, const std::string& file, HostSpec* spec,
                    PluginSettings* out, ErrorSink& ctx);

}  // namespace exactly::config
