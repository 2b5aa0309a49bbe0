// Files to a HostSpec: finds the pipeline files, reads each into YAML (yaml_guard.hpp
// bounds it first), takes the top-level keys of all of them (plugin path first, so the
// components can be resolved), scans the plugin path, then reads every pipeline.
#include "config/loader.hpp"

#include "config/exclusive_paths.hpp"
#include "config/read_regular_file.hpp"

#include "config/pipeline_reader.hpp"
#include "config/top_level_keys.hpp"
#include "config/yaml_flatten.hpp"
#include "config/yaml_guard.hpp"
#include "config/yaml_merge_keys.hpp"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

namespace exactly::config {
namespace fs = std::filesystem;

namespace {

// Top-level keys that start with "x-" are ignored, as in Compose files: a place for
// anchors that pipelines merge in (`x-kafka: &kafka {...}`, then `<<: *kafka`), which
// would otherwise be refused as unknown keys.
void drop_extension_keys(YAML::Node root) {
  std::vector<YAML::Node> drop;
  for (auto it = root.begin(); it != root.end(); ++it)
    if (it->first.IsScalar() && it->first.Scalar().rfind("x-", 0) == 0) drop.push_back(it->first);
  for (auto& k : drop) root.remove(k);
}

}  // namespace

bool is_pipeline_file_name(const std::string& name) {
  auto ends = [&](const char* s) {
    const size_t n = std::strlen(s);
    return name.size() >= n && name.compare(name.size() - n, n, s) == 0;
  };
  if (name.empty() || name[0] == '.') return false;  // editor temp files, .swp
  if (ends(".test.yaml") || ends(".test.yml")) return false;  // `exactly test` cases
  return ends(".yaml") || ends(".yml");
}

std::vector<std::string> expand_paths(const std::vector<std::string>& paths,
                                      std::vector<Diagnostic>* errors) {
  std::vector<std::string> files;
  for (auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      fs::directory_iterator it(p, ec), end;
      // A directory this user cannot list is not an empty one (QA: "no pipeline files
      // found" for /etc/exactly at 0750, read as another user).
      for (; !ec && it != end; it.increment(ec))
        if (is_pipeline_file_name(it->path().filename().string())) found.push_back(it->path().string());
      if (ec) {
        errors->push_back({Mark{p, 0, 0}, "cannot read the directory: " + ec.message()});
        continue;
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      errors->push_back({Mark{p, 0, 0}, "no such file or directory"});
    }
  }
  // A file named twice (`run dir dir/a.yaml`, or the same path twice) is read once: read
  // twice, every pipeline in it was "defined already" at its own line.
  std::vector<std::string> once;
  std::set<std::string> seen;
  for (auto& f : files) {
    std::error_code ec;
    const std::string key = fs::weakly_canonical(f, ec).string();
    if (seen.insert(ec ? f : key).second) once.push_back(f);
  }
  return once;
}

LoadResult load(const std::vector<std::string>& paths, plugin::Registry& registry,
                const std::function<void(const HostSpec&)>& on_host_keys) {
  LoadResult r;
  ErrorSink ctx{&r.errors};
  r.spec.files = expand_paths(paths, &r.errors);
  if (r.spec.files.empty() && r.errors.empty())
    r.errors.push_back({Mark{paths.empty() ? "" : paths[0], 0, 0}, "no pipeline files found"});

  struct Doc {
    std::string file;
    YAML::Node root;
    std::vector<Flat> flat;
  };
  std::vector<Doc> docs;
  for (auto& file : r.spec.files) {
    Doc d;
    d.file = file;
    std::string text, why;
    if (!read_regular_file(file, kMaxConfigBytes, text, why)) {
      ctx.error(Mark{file, 0, 0}, "cannot read file: " + why);
      continue;
    }
    if (auto problem = check_yaml_text(text)) {
      ctx.error(Mark{file, problem->line, problem->col}, problem->message);
      continue;
    }
    try {
      if (auto problem = check_yaml_stream(text)) {
        ctx.error(Mark{file, problem->line, problem->col}, problem->message);
        continue;
      }
      auto all = YAML::LoadAll(text);
      if (auto problem = check_yaml_documents(all, d.root)) {
        ctx.error(Mark{file, problem->line, problem->col}, problem->message);
        continue;
      }
    } catch (const YAML::DeepRecursion& e) {
      // yaml-cpp says only "bad file" for it.
      ctx.error(mark_at(file, e.mark), fmt::format("malformed YAML: nested deeper than {} levels (of [ ] or "
                                                   "{{ }}, or of indentation): no pipeline file nests so deep",
                                                   e.depth()));
      continue;
    } catch (const YAML::ParserException& e) {
      ctx.error(mark_at(file, e.mark), fmt::format("malformed YAML: {}", e.msg));
      continue;
    }
    if (d.root.IsNull()) {
      ctx.error(Mark{file, 1, 1}, "empty file: expected a map with 'pipelines'");
      continue;
    }
    if (!d.root.IsMap()) {
      ctx.error(mark_at(file, d.root.Mark()),
                fmt::format("expected a map with 'pipelines' at the top, got {}", node_kind(d.root)));
      continue;
    }
    expand_merge_keys(d.root, file, ctx);
    drop_extension_keys(d.root);
    flatten(d.root, "", file, {"pipelines"}, &d.flat, ctx);
    docs.push_back(std::move(d));
  }

  // plugin.path first, so components can be resolved.
  PluginSettings plugins;
  for (auto& d : docs) read_top_level(d.flat, d.file, &r.spec, &plugins, ctx);
  if (on_host_keys) on_host_keys(r.spec);
  for (auto& d : plugin::default_plugin_path()) plugins.plugin_dirs.push_back(d);
  r.spec.plugin_path = plugins.plugin_dirs;
  registry.set_insecure(plugins.insecure);
  registry.scan(plugins.plugin_dirs);

  for (auto& d : docs) {
    for (auto& f : d.flat) {
      if (f.key != "pipelines") continue;
      if (!f.value.IsSequence()) {
        ctx.error(f.value_mark, fmt::format("key 'pipelines' expects a list, got {}",
                                            node_kind(f.value)));
        continue;
      }
      size_t i = 0;
      for (const auto& p : f.value) read_pipeline(p, mark_at(d.file, p.Mark()), d.file, registry,
                                                  &r.spec, ctx, i++);
    }
  }
  check_exclusive_paths(r.spec, r.errors);
  // Report in reading order, whatever order the checks ran in.
  std::stable_sort(r.errors.begin(), r.errors.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.mark.file, a.mark.line, a.mark.col) < std::tie(b.mark.file, b.mark.line, b.mark.col);
  });
  // Once each: a value under a YAML anchor is checked wherever the anchor is used, and an
  // error in it points at the anchor's line every time (QA: the same line printed twice,
  // counted as two errors).
  std::set<std::tuple<std::string, int, int, std::string>> seen;
  std::erase_if(r.errors, [&](const Diagnostic& d) {
    return !seen.emplace(d.mark.file, d.mark.line, d.mark.col, d.message).second;
  });
  if (r.ok() && r.spec.pipelines.empty())
    r.errors.push_back({Mark{r.spec.files.empty() ? "" : r.spec.files[0], 0, 0},
                        "no pipelines defined (expected a 'pipelines' list)"});
  return r;
}

}  // namespace exactly::config
