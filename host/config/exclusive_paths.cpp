#include "config/exclusive_paths.hpp"

#include "plugin/loader.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <tuple>

namespace exactly::config {

namespace {

// Relative paths are the host's working directory's, as the plugin opens them.
std::string normal_path(const std::string& value) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(value, ec);
  if (ec) return value;
  return p.lexically_normal().string();
}

}  // namespace

void check_exclusive_paths(const HostSpec& spec, std::vector<Diagnostic>& errors) {
  struct First {
    std::string where;
    Mark mark;
  };
  // (plugin, kind, key, file) -> the first component that named it.
  std::map<std::tuple<std::string, int, std::string, std::string>, First> held;
  auto check = [&](const PipelineSpec& p, const ComponentSpec& cs) {
    if (cs.component == nullptr) return;
    for (const auto& field : cs.component->fields) {
      if (!field.exclusive_path) continue;
      for (const auto& [key, value] : cs.values) {
        if (key != field.key || value.empty()) continue;
        const std::string where = fmt::format("pipeline '{}' {} ({})", p.name, cs.where, cs.plugin);
        auto [it, first] = held.try_emplace({cs.plugin, static_cast<int>(cs.component->kind), key,
                                             normal_path(value)},
                                            First{where, cs.mark_of(key)});
        if (first) continue;
        errors.push_back(
            {cs.mark_of(key),
             fmt::format("{}: key '{}': {} is already used by {} ({}): the {} plugin holds a file "
                         "named there alone, so the second would fail at start. Give each its own "
                         "file",
                         where, key, value, it->second.where, it->second.mark.str(), cs.plugin)});
      }
    }
  };
  for (const auto& p : spec.pipelines) {
    check(p, p.source);
    for (const auto& t : p.transforms) check(p, t);
    check(p, p.sink);
    if (p.dead_letter) check(p, *p.dead_letter);
  }
}

}  // namespace exactly::config
