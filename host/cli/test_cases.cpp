#include "cli/test_cases.hpp"

#include "config/read_regular_file.hpp"
#include "config/yaml_guard.hpp"

#include <charconv>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

namespace exactly::cli {
namespace fs = std::filesystem;

namespace {

// A JSON-lines input or expectation file of a test case; larger ones are a mistake.
constexpr size_t kMaxInputBytes = size_t{256} << 20;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw TestFileError(where + ": " + what);
}

std::string at(const std::string& file, const YAML::Node& n) {
  return file + ":" + std::to_string(n.Mark().line + 1);
}

// file:line:col of a node (a key, say).
std::string at_col(const std::string& file, const YAML::Node& n) {
  return at(file, n) + ":" + std::to_string(n.Mark().column + 1);
}

bool plain_literal(const std::string& s) {
  if (s == "true" || s == "false" || s == "null") return true;
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != nullptr && *end == '\0';
}

void json_string(std::string& out, const std::string& s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

void write_json(std::string& out, const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      out.push_back('{');
      bool first = true;
      for (const auto& kv : n) {
        if (!first) out.push_back(',');
        first = false;
        json_string(out, kv.first.Scalar());
        out.push_back(':');
        write_json(out, kv.second);
      }
      out.push_back('}');
      break;
    }
    case YAML::NodeType::Sequence: {
      out.push_back('[');
      for (size_t i = 0; i < n.size(); ++i) {
        if (i) out.push_back(',');
        write_json(out, n[i]);
      }
      out.push_back(']');
      break;
    }
    case YAML::NodeType::Null:
      out += "null";
      break;
    default:
      // A quoted scalar has the tag "!": always a string.
      if (n.Tag() != "!" && plain_literal(n.Scalar())) out += n.Scalar();
      else json_string(out, n.Scalar());
  }
}

TestRecord parse_record(const YAML::Node& n, const std::string& where, bool expected) {
  if (!n.IsMap()) fail(where, "a record is a map with value (and optionally key, headers, partition, topic, offset, timestamp)");
  TestRecord r;
  r.where = where;
  // A key's error names its column when the key is on the record's line (flow maps and
  // JSON lines, the usual forms).
  auto where_of = [&](const YAML::Mark& m) {
    const bool same_line = !m.is_null() && m.line == n.Mark().line;
    return same_line ? where + ":" + std::to_string(m.column + 1) : where;
  };
  static const char* const kKeys[] = {"value", "key", "headers", "partition", "topic", "offset", "timestamp"};
  for (const auto& kv : n) {
    const std::string k = kv.first.Scalar();
    bool known = false;
    for (const char* x : kKeys) known |= k == x;
    if (!known)
      fail(where_of(kv.first.Mark()),
           "unknown record key '" + k + "' (known: value, key, headers, partition, topic, offset, timestamp)");
  }
  const YAML::Node v = n["value"];
  if (!v) fail(where, "record without 'value'");
  if (v.IsMap() || v.IsSequence()) {
    r.value = to_json(v);
    if (expected) r.value_json = v;
  } else if (!v.IsNull()) {
    r.value = v.Scalar();
  }
  auto field_fail = [&](const char* key, const std::string& what) {
    fail(where_of(n[key].Mark()), "key '" + std::string(key) + "': " + what);
  };
  auto int_field = [&](const char* key, int64_t lo, int64_t hi) -> int64_t {
    const YAML::Node f = n[key];
    const std::string s = f.IsScalar() ? f.Scalar() : std::string();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!f.IsScalar() || ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi)
      field_fail(key, "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                          ", got " + (f.IsScalar() ? "'" + s + "'" : std::string("a ") + (f.IsMap() ? "map" : "list")));
    return v;
  };
  if (n["key"] && !n["key"].IsNull()) {
    if (!n["key"].IsScalar()) field_fail("key", "expects a string, got a " + std::string(n["key"].IsMap() ? "map" : "list"));
    r.key = n["key"].Scalar();
  }
  if (n["topic"]) {
    if (!n["topic"].IsScalar() || n["topic"].Scalar().empty()) field_fail("topic", "expected a topic name");
    r.topic = n["topic"].Scalar();
    r.topic_given = true;
  }
  if (n["partition"]) {
    r.partition = static_cast<int32_t>(int_field("partition", 0, std::numeric_limits<int32_t>::max()));
    r.partition_given = true;
  }
  // Offsets a case leaves out continue from the one before (offset + 1), as a record's
  // position is its offset + 1: both must fit in 64 bits.
  if (n["offset"]) r.offset = int_field("offset", 0, std::numeric_limits<int64_t>::max() - 1);
  if (n["timestamp"]) r.timestamp_ms = int_field("timestamp", 0, std::numeric_limits<int64_t>::max());
  if (const YAML::Node h = n["headers"]) {
    if (!h.IsMap()) field_fail("headers", "expected a map of name: value");
    for (const auto& kv : h) {
      if (!kv.second.IsScalar())
        fail(where_of(kv.second.Mark()),
             "key 'headers': header '" + kv.first.Scalar() + "' expects a string, got " +
                 (kv.second.IsMap() ? "a map" : kv.second.IsSequence() ? "a list" : "nothing (write '' for an empty value)"));
      r.headers.emplace_back(kv.first.Scalar(), kv.second.Scalar());
    }
  }
  return r;
}

// A list inline, or a file of JSON lines (relative to the test file).
std::vector<TestRecord> parse_records(const YAML::Node& n, const std::string& file,
                                      const std::string& key, bool expected) {
  std::vector<TestRecord> out;
  if (n.IsSequence()) {
    for (const auto& r : n) out.push_back(parse_record(r, at(file, r), expected));
    return out;
  }
  if (!n.IsScalar()) fail(at(file, n), key + ": a list of records or the path of a JSON-lines file");
  fs::path p = n.Scalar();
  if (p.is_relative()) p = fs::path(file).parent_path() / p;
  std::string text, why;
  if (!config::read_regular_file(p.string(), kMaxInputBytes, text, why))
    fail(at(file, n), key + ": cannot read " + p.string() + ": " + why);
  if (text.size() > kMaxInputBytes) fail(at(file, n), key + ": " + p.string() + " is larger than 256 MiB");
  std::istringstream in(text);
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = p.string() + ":" + std::to_string(no);
    YAML::Node r;
    try {
      r = YAML::Load(line);
    } catch (const YAML::Exception& e) {
      fail(where, "not a JSON record: " + e.msg);
    }
    out.push_back(parse_record(r, where, expected));
  }
  return out;
}

}  // namespace

std::string to_json(const YAML::Node& n) {
  std::string out;
  write_json(out, n);
  return out;
}

namespace {

enum class Kind { kString, kNumber, kBool, kNull, kBare };

// A scalar's JSON type: quoted = string; plain = a JSON literal, or `bare` (a YAML plain
// string: a string where the test file wrote it, not JSON where a transform wrote it).
Kind kind_of(const YAML::Node& n) {
  if (n.IsNull()) return Kind::kNull;
  if (n.Tag() == "!") return Kind::kString;
  const std::string& s = n.Scalar();
  if (s == "true" || s == "false") return Kind::kBool;
  if (s == "null") return Kind::kNull;
  return plain_literal(s) ? Kind::kNumber : Kind::kBare;
}

bool same_scalar(const YAML::Node& expected, const YAML::Node& actual) {
  Kind e = kind_of(expected), a = kind_of(actual);
  if (a == Kind::kBare) return false;  // not JSON
  if (e == Kind::kBare) e = Kind::kString;
  if (e != a) return false;
  if (e == Kind::kNull) return true;
  if (expected.Scalar() == actual.Scalar()) return true;
  return e == Kind::kNumber && std::strtod(expected.Scalar().c_str(), nullptr) ==
                                   std::strtod(actual.Scalar().c_str(), nullptr);
}

}  // namespace

bool same_json(const YAML::Node& expected, const YAML::Node& actual) {
  const bool e_scalar = expected.IsScalar() || expected.IsNull();
  const bool a_scalar = actual.IsScalar() || actual.IsNull();
  if (e_scalar || a_scalar) return e_scalar && a_scalar && same_scalar(expected, actual);
  if (expected.Type() != actual.Type()) return false;
  if (expected.IsMap()) {
    if (expected.size() != actual.size()) return false;
    for (const auto& kv : actual)  // JSON's names are quoted; YAML's flow maps need not be
      if (kv.first.Tag() != "!") return false;
    for (const auto& kv : expected) {
      const YAML::Node other = actual[kv.first.Scalar()];
      if (!other || !same_json(kv.second, other)) return false;
    }
    return true;
  }
  if (expected.size() != actual.size()) return false;
  for (size_t i = 0; i < expected.size(); ++i)
    if (!same_json(expected[i], actual[i])) return false;
  return true;
}

std::string test_file_for(const std::string& pipeline_file) {
  fs::path p(pipeline_file);
  return (p.parent_path() / (p.stem().string() + ".test.yaml")).string();
}

std::vector<TestCase> load_test_cases(const std::string& path) {
  // Read as config files are: a FIFO would block `exactly test` until something wrote to it.
  std::string text, why;
  if (!config::read_regular_file(path, config::kMaxConfigBytes, text, why))
    throw TestFileError(path + ": cannot read the test file: " + why);
  if (text.size() > config::kMaxConfigBytes) throw TestFileError(path + ": larger than 4 MiB");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw TestFileError(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  const YAML::Node tests = root["tests"];
  if (!tests || !tests.IsSequence() || tests.size() == 0)
    fail(path + ":1", "expected 'tests:' with a list of cases");
  std::vector<TestCase> out;
  for (const auto& t : tests) {
    const std::string where = at(path, t);
    if (!t.IsMap()) fail(where, "a case is a map (name, input, expect)");
    for (const auto& kv : t) {
      const std::string k = kv.first.Scalar();
      if (k != "name" && k != "pipeline" && k != "input" && k != "expect" && k != "batch" &&
          k != "rejected")
        fail(at_col(path, kv.first), "unknown key '" + k + "' (known: name, pipeline, input, expect, batch, rejected)");
    }
    TestCase c;
    c.where = where;
    c.name = t["name"] ? t["name"].Scalar() : "case at line " + std::to_string(t.Mark().line + 1);
    if (t["pipeline"]) c.pipeline = t["pipeline"].Scalar();
    if (!t["input"]) fail(where, "case '" + c.name + "' has no 'input'");
    if (!t["expect"]) fail(where, "case '" + c.name + "' has no 'expect' (an empty list if nothing comes out)");
    c.input = parse_records(t["input"], path, "input", false);
    c.expect = parse_records(t["expect"], path, "expect", true);
    auto count_of = [&](const char* key) -> size_t {
      const YAML::Node f = t[key];
      const std::string v = f.IsScalar() ? f.Scalar() : std::string();
      size_t n = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (!f.IsScalar() || ec != std::errc() || end != v.data() + v.size())
        fail(at_col(path, f), "key '" + std::string(key) + "': expected a count (0 or more), got " +
                                  (f.IsScalar() ? "'" + v + "'" : std::string("a ") + (f.IsMap() ? "map" : "list")));
      return n;
    };
    if (t["batch"]) c.batch = count_of("batch");
    if (t["rejected"]) c.rejected = count_of("rejected");
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace exactly::cli
