// Checks a pipeline file's YAML before anything reads it, so that nothing in it is
// silently ignored and no file can exhaust the host: bounded size, one document, no
// indented first key (yaml-cpp would drop whatever follows the dedent), and a bounded
// expansion (an alias bomb is a few lines that expand to billions of nodes).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <optional>
#include <string>

namespace exactly::config {

struct YamlProblem {
  int line = 0, col = 0;  // 1-based; 0 = the whole file
  std::string message;
};

constexpr size_t kMaxConfigBytes = 4u << 20;
constexpr size_t kMaxYamlNodes = 100000;

// Before parsing: size and the first key's column.
std::optional<YamlProblem> check_yaml_text(const std::string& text);
// Before YAML::LoadAll: the document count is bounded. yaml-cpp 0.7 never gets past a
// stray ',' outside [ ] or { } (LoadAll(",") returns empty documents forever; found by
// fuzz_config_load), so the documents are counted, cheaply, with a bound first.
constexpr size_t kMaxYamlDocuments = 64;
std::optional<YamlProblem> check_yaml_stream(const std::string& text);
// After parsing: at most one non-empty document, at most kMaxYamlNodes nodes once
// aliases are expanded, and no tag but YAML's own. Returns the document to use in `doc`.
std::optional<YamlProblem> check_yaml_documents(const std::vector<YAML::Node>& docs, YAML::Node& doc);

}  // namespace exactly::config
