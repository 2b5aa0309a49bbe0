#pragma once
// YAML merge keys (`<<: *defaults`, `<<: [*a, *b]`): yaml-cpp 0.7 parses `<<` as a plain
// key, so without this a file that shares settings through anchors would be refused key
// by key ("unknown key '<<.bootstrap'"), though every other YAML tool reads it.
#include "config/yaml_flatten.hpp"

#include <yaml-cpp/yaml.h>

#include <string>

namespace exactly::config {

// Expands every merge key of `doc` in place, by the YAML 1.1 merge rule: a map's own
// keys win over merged ones, and in a list of maps an earlier map wins over a later one.
// The merge is shallow (a merged `config:` map is replaced whole by an own `config:`,
// not combined). Merged keys keep the file:line:col of where they were written.
// A `<<` whose value is not a map or a list of maps is an error at its line.
// Call it after check_yaml_documents, which bounds the expanded size and depth.
void expand_merge_keys(YAML::Node doc, const std::string& file, ErrorSink& ctx);

}  // namespace exactly::config
