#pragma once
// `exactly test`: the cases of a pipeline file's test file (<stem>.test.yaml beside it),
// and records as JSON lines. Errors name the file and line.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace exactly::cli {

struct TestRecord {
  std::string topic = "test";
  int32_t partition = 0;
  // Written in the record: an expected record compares only what it gives.
  bool topic_given = false, partition_given = false;
  int64_t offset = -1;  // -1: the next one of its partition
  int64_t timestamp_ms = -1;
  std::optional<std::string> key;
  std::string value;
  // The value as written in an expected record when it was JSON (a map or a list):
  // compared by structure, not by bytes.
  std::optional<YAML::Node> value_json;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string where;  // file:line
};

struct TestCase {
  std::string name;
  std::string pipeline;  // empty: the file's only pipeline
  std::vector<TestRecord> input;
  std::vector<TestRecord> expect;
  size_t batch = 0;      // records per process() call; 0 = all in one
  size_t rejected = 0;   // records the transforms must reject
  std::string where;
};

struct TestFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// <dir>/<stem>.test.yaml for <dir>/<stem>.yaml (or .yml).
std::string test_file_for(const std::string& pipeline_file);
// Throws TestFileError with file:line and the key.
std::vector<TestCase> load_test_cases(const std::string& path);

// JSON text of a YAML node read from JSON (quoted scalars stay strings).
std::string to_json(const YAML::Node& n);
// Whether `actual` (a transform's output, read as YAML) is JSON with the structure and
// types of `expected` (as written in the test file: quoted scalars are strings, plain
// ones JSON literals where they read as one, else strings). Numbers compare by value.
bool same_json(const YAML::Node& expected, const YAML::Node& actual);

}  // namespace exactly::cli
