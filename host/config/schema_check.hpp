#pragma once
// Flattened values checked against a schema (the host's own, host_schema.hpp, or a
// plugin's): unknown keys (with a "did you mean"), types, allowed values, required keys;
// values normalised the way plugins get them (durations in ms, sizes in bytes) and
// defaults filled in.
#include "config/yaml_flatten.hpp"
#include "plugin/loader.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace exactly::config {

struct Checked {
  std::vector<std::pair<std::string, std::string>> values;  // key -> normalised value
  std::map<std::string, Mark> marks;                        // where each given key's value is
};

// `context` starts each message ("pipeline 'p' source (kafka)"); `block` is where a
// missing key is reported.
Checked check_fields(const std::vector<Flat>& flat, const std::vector<plugin::Field>& fields,
                     const std::string& context, const Mark& block, ErrorSink& ctx);

// The value checked for `key`, or "" when it has none.
std::string value_of(const Checked& c, const std::string& key);

}  // namespace exactly::config
