#include "config/plugin_checks.hpp"

#include "engine/plugin_call.hpp"
#include "plugin/loader.hpp"

#include <fmt/format.h>

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

std::optional<Diagnostic> check_with_plugin(const ComponentSpec& spec, const std::string& pipeline,
                                            const std::string& context) {
  if (spec.component == nullptr) return std::nullopt;
  ValidateFn fn = validate_of(*spec.component);
  if (fn == nullptr) return std::nullopt;
  std::vector<ex_config_entry> entries;
  entries.reserve(spec.values.size());
  for (auto& [k, v] : spec.values)
    entries.push_back({{reinterpret_cast<const uint8_t*>(k.data()), k.size()},
                       {reinterpret_cast<const uint8_t*>(v.data()), v.size()}});
  ex_config cfg{sizeof(ex_config), entries.data(), entries.size()};
  ex_error err{};
  err.struct_size = sizeof(err);
  // A plugin that crashes in its check is named in the crash report like in any call.
  std::string stage = spec.where + "/" + spec.plugin;
  std::string label = fmt::format("pipeline '{}', stage '{}' ({})", pipeline, stage,
                                  spec.component->library ? spec.component->library->path : "?");
  engine::CallSite site{&pipeline, &stage, &label};
  int32_t rc;
  {
    engine::InPluginCall in_call(site, "validate");
    rc = fn(&cfg, &err);
  }
  if (rc == EX_OK) return std::nullopt;
  std::string key = text_of(err.key, sizeof(err.key));
  std::string message = text_of(err.message, sizeof(err.message));
  if (message.empty()) message = fmt::format("refused by the plugin (error code {})", rc);
  std::string what = fmt::format("{} ({})", context, spec.plugin);
  if (key.empty()) return Diagnostic{spec.config_mark.line > 0 ? spec.config_mark : spec.mark,
                                     fmt::format("{}: {}", what, message)};
  return Diagnostic{spec.mark_of(key), fmt::format("{}: key '{}': {}", what, key, message)};
}

}  // namespace exactly::config
