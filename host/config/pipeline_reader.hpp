#pragma once
// One entry of a file's `pipelines:` list into a PipelineSpec: the host's keys checked
// against pipeline_fields(), each component (source, transforms, sink, dead-letter sink)
// resolved in the registry and checked against its schema, then by its plugin's own
// check (ABI 1.3 `validate`).
#include "config/model.hpp"
#include "config/yaml_flatten.hpp"
#include "plugin/loader.hpp"

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>

namespace exactly::config {

// Appends the pipeline to spec->pipelines unless its name is taken; `index` names an
// entry that has no name yet ("pipelines[2]").
void read_pipeline(const YAML::Node& node, const Mark& at, const std::string& file,
                   plugin::Registry& reg, HostSpec* spec, ErrorSink& ctx, size_t index);

}  // namespace exactly::config
