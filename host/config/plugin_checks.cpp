#include "config/plugin_checks.hpp"

#include "engine/plugin_call.hpp"
#include "plugin/loader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace exactly::config {

namespace {

using ValidateFn = int32_t (*)(const ex_config*, ex_error*);

// NULL also when the plugin's vtable predates 1.3: the loader's copy is zero-filled there.
ValidateFn validate_of(const plugin::Component& c) {
  switch (c.kind) {
    case EX_KIND_SOURCE: return c.source.validate;
    case EX_KIND_TRANSFORM: return c.transform.validate;
    case EX_KIND_SINK: return c.sink.validate;
  }
  return nullptr;
}

// Bounded copy of a plugin-filled, caller-allocated text that may lack its NUL.
std::string text_of(const char* buf, size_t cap) {
  size_t n = 0;
  while (n < cap && buf[n] != '\0') ++n;
  return std::string(buf, n);
}

}  // namespace

std::vector<Diagnostic> check_with_plugin(const ComponentSpec& spec, const std::string& pipeline,
                                         const std::string& context) {
  std::vector<Diagnostic> found;
  if (spec.component == nullptr) return found;
  ValidateFn fn = validate_of(*spec.component);
  if (fn == nullptr) return found;
  // A plugin's check stops at its first error. So that one `exactly validate` lists every
  // bad value (QA: eight keys took eight fix-and-run cycles), the check runs again
  // without each key it refused. Only errors about a key still written in the file are
  // kept after the first: a key that only the removal made missing, or an error naming no
  // key, may be the removal's doing.
  auto values = spec.values;
  std::string stage = spec.where + "/" + spec.plugin;
  std::string label = fmt::format("pipeline '{}', stage '{}' ({})", pipeline, stage,
                                  spec.component->library ? spec.component->library->path : "?");
  engine::CallSite site{&pipeline, &stage, &label};
  const std::string what = fmt::format("{} ({})", context, spec.plugin);
  constexpr size_t kMaxErrors = 20;
  while (found.size() < kMaxErrors) {
    std::vector<ex_config_entry> entries;
    entries.reserve(values.size());
    for (auto& [k, v] : values)
      entries.push_back({{reinterpret_cast<const uint8_t*>(k.data()), k.size()},
                         {reinterpret_cast<const uint8_t*>(v.data()), v.size()}});
    ex_config cfg{sizeof(ex_config), entries.data(), entries.size()};
    ex_error err{};
    err.struct_size = sizeof(err);
    int32_t rc;
    {
      // A plugin that crashes in its check is named in the crash report like in any call.
      engine::InPluginCall in_call(site, "validate");
      rc = fn(&cfg, &err);
    }
    if (rc == EX_OK) break;
    std::string key = text_of(err.key, sizeof(err.key));
    std::string message = text_of(err.message, sizeof(err.message));
    if (message.empty()) message = fmt::format("refused by the plugin (error code {})", rc);
    auto written = [&](const std::string& k) {
      return k == key || (k.size() > key.size() && k.compare(0, key.size(), key) == 0 && k[key.size()] == '.');
    };
    const bool in_file = !key.empty() && std::any_of(values.begin(), values.end(),
                                                     [&](const auto& kv) { return written(kv.first); });
    if (!found.empty() && !in_file) break;
    if (key.empty())
      found.push_back(Diagnostic{spec.config_mark.line > 0 ? spec.config_mark : spec.mark,
                                 fmt::format("{}: {}", what, message)});
    else
      found.push_back(Diagnostic{spec.mark_of(key), fmt::format("{}: key '{}': {}", what, key, message)});
    if (!in_file) break;
    std::erase_if(values, [&](const auto& kv) { return written(kv.first); });
  }
  return found;
}

}  // namespace exactly::config
