#include "config/yaml_flatten.hpp"

#include "config/interpolate.hpp"
#include "util/secrets.hpp"

#include <fmt/format.h>

namespace exactly::config {

Mark mark_at(const std::string& file, const YAML::Mark& m) {
  if (m.is_null()) return Mark{file, 0, 0};
  return Mark{file, m.line + 1, m.column + 1};
}

const char* node_kind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "nothing";
    default: return "a scalar";
  }
}

namespace {

// A scalar's ${...} references resolved; values of secret-named keys and values read
// from files are remembered as secrets.
std::string resolve_scalar(const std::string& text, const std::string& key, const Mark& at, ErrorSink& ctx) {
  Interpolated r = interpolate(text);
  if (!r.error.empty()) {
    ctx.unresolved(at, fmt::format("key '{}': {}", key, r.error));
    return text;
  }
  if (r.from_file || secrets::key_is_secret(key)) secrets::add(r.value);
  // Plugins get settings as C strings: a NUL would cut the value short unseen (a file
  // sink's path "out\0.x" wrote to "out", and its commit record over the output).
  if (r.value.find('\0') != std::string::npos)
    ctx.error(at, fmt::format("key '{}': the value contains a NUL character (\\0), which no "
                              "setting can hold",
                              key));
  return r.value;
}

YAML::Node resolve(const YAML::Node& v, const std::string& key, const Mark& at, ErrorSink& ctx) {
  if (v.IsScalar()) {
    std::string s = resolve_scalar(v.Scalar(), key, at, ctx);
    if (s == v.Scalar()) return v;
    YAML::Node n(s);
    return n;
  }
  if (v.IsSequence()) {
    bool any = false;
    YAML::Node n(YAML::NodeType::Sequence);
    for (const auto& item : v) {
      if (!item.IsScalar()) {
        n.push_back(item);
        continue;
      }
      std::string s = resolve_scalar(item.Scalar(), key, at, ctx);
      any = any || s != item.Scalar();
      n.push_back(YAML::Node(s));
    }
    return any ? n : v;
  }
  return v;
}

}  // namespace

void flatten(const YAML::Node& map, const std::string& prefix, const std::string& file,
             const std::set<std::string>& stop, std::vector<Flat>* out, ErrorSink& ctx) {
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    Mark km = mark_at(file, it->first.Mark());
    if (!it->first.IsScalar()) {
      ctx.error(km, "keys must be plain text");
      continue;
    }
    std::string key = prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
    if (!seen.insert(it->first.Scalar()).second) {
      ctx.error(km, fmt::format("duplicate key '{}'", key));
      continue;
    }
    // A copy (a Node is a handle): `it->` yields a proxy that dies with the statement, so a
    // reference to its member dangles (ASan: stack-use-after-scope, found by fuzz_config_load).
    const YAML::Node v = it->second;
    if (v.IsMap() && v.size() > 0 && !stop.count(key)) {
      flatten(v, key, file, stop, out, ctx);
    } else {
      Mark vm = mark_at(file, v.Mark());
      out->push_back(Flat{key, resolve(v, key, vm, ctx), km, vm});
    }
  }
}

}  // namespace exactly::config
