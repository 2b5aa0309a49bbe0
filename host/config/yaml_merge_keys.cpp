#include "config/yaml_merge_keys.hpp"

#include <fmt/format.h>

#include <set>
#include <utility>
#include <vector>

namespace exactly::config {

namespace {

constexpr const char* kMergeKey = "<<";

bool is_merge_key(const YAML::Node& key) {
  // A quoted "<<" is an ordinary string key (YAML gives it the tag "!"), as in other readers.
  return key.IsScalar() && key.Scalar() == kMergeKey && key.Tag() != "!";
}

void expand(YAML::Node n, const std::string& file, ErrorSink& ctx, size_t depth);

// The maps a `<<` names, in the order that wins (first wins); empty after an error.
std::vector<YAML::Node> merge_sources(const YAML::Node& value, const Mark& at, ErrorSink& ctx) {
  std::vector<YAML::Node> out;
  auto bad = [&](const YAML::Node& n) {
    ctx.error(at, fmt::format("merge key '<<' expects a map or a list of maps (an alias such as "
                              "*defaults), got {}",
                              node_kind(n)));
  };
  if (value.IsMap()) {
    out.push_back(value);
  } else if (value.IsSequence()) {
    for (const auto& item : value) {
      if (!item.IsMap()) {
        bad(item);
        return {};
      }
      out.push_back(item);
    }
  } else {
    bad(value);
  }
  return out;
}

void expand_map(YAML::Node map, const std::string& file, ErrorSink& ctx, size_t depth) {
  std::vector<std::pair<YAML::Node, YAML::Node>> merges;  // (key, value) of each `<<`
  std::set<std::string> own;
  for (auto it = map.begin(); it != map.end(); ++it) {
    YAML::Node key = it->first, value = it->second;
    if (is_merge_key(key)) {
      merges.emplace_back(key, value);
      continue;
    }
    if (key.IsScalar()) own.insert(key.Scalar());
    expand(value, file, ctx, depth + 1);
  }
  if (merges.empty()) return;
  for (size_t i = 1; i < merges.size(); ++i)
    ctx.error(mark_at(file, merges[i].first.Mark()),
              "merge key '<<' given twice in one map: give one, with a list of maps ([*a, *b])");
  for (auto& m : merges) map.remove(m.first);
  const auto& [key, value] = merges.front();
  std::vector<YAML::Node> sources = merge_sources(value, mark_at(file, key.Mark()), ctx);
  for (auto& src : sources) {
    expand(src, file, ctx, depth + 1);  // a merged map may merge others itself
    for (auto it = src.begin(); it != src.end(); ++it) {
      YAML::Node k = it->first;
      if (!k.IsScalar() || is_merge_key(k) || !own.insert(k.Scalar()).second) continue;
      // The source's own key and value nodes: their marks point at where they were written.
      map.force_insert(k, it->second);
    }
  }
}

void expand(YAML::Node n, const std::string& file, ErrorSink& ctx, size_t depth) {
  // check_yaml_documents has bounded the depth; this only guards against being called
  // without it.
  if (depth > 1000) return;
  if (n.IsMap()) {
    expand_map(n, file, ctx, depth);
  } else if (n.IsSequence()) {
    for (auto it = n.begin(); it != n.end(); ++it) expand(*it, file, ctx, depth + 1);
  }
}

}  // namespace

void expand_merge_keys(YAML::Node doc, const std::string& file, ErrorSink& ctx) {
  expand(doc, file, ctx, 0);
}

}  // namespace exactly::config
