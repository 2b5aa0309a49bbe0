#include "plugin/loader.hpp"
#include "plugin/build_facts.hpp"
#include "plugin/replaced_library.hpp"
#include "plugin/trust.hpp"
#include "engine/plugin_call.hpp"
#include "config/units.hpp"
#include "util/log.hpp"

#include <boost/dll/runtime_symbol_info.hpp>
#include <algorithm>
#include <optional>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <fmt/format.h>

namespace exactly::plugin {
namespace fs = std::filesystem;

const char* kind_name(ex_component_kind k) {
  switch (k) {
    case EX_KIND_SOURCE: return "source";
    case EX_KIND_TRANSFORM: return "transform";
    case EX_KIND_SINK: return "sink";
  }
  return "unknown";
}

const Field* Component::field(const std::string& key) const {
  for (auto& f : fields)
    if (f.key == key) return &f;
  return nullptr;
}

namespace {

// The smallest struct sizes this host accepts: everything of ABI 1.0.
constexpr uint32_t kMinDescriptor = offsetof(ex_plugin_descriptor, component_count) + sizeof(size_t);
constexpr uint32_t kMinComponent = offsetof(ex_component, vtable) + sizeof(void*);
constexpr uint32_t kMinField = offsetof(ex_config_field, allowed) + sizeof(void*);

template <typename VT>
bool copy_vtable(const void* src, VT* dst, std::string* why, const char* what) {
  if (src == nullptr) {
    *why = fmt::format("{} has no vtable", what);
    return false;
  }
  uint32_t size = *static_cast<const uint32_t*>(src);
  // create and destroy are the minimum anyone can work with.
  if (size < offsetof(VT, destroy) + sizeof(void*)) {
    *why = fmt::format("{} vtable is too small ({} bytes)", what, size);
    return false;
  }
  std::memset(dst, 0, sizeof(VT));
  std::memcpy(dst, src, std::min<size_t>(size, sizeof(VT)));
  dst->struct_size = sizeof(VT);
  if (dst->create == nullptr || dst->destroy == nullptr) {
    *why = fmt::format("{} vtable lacks create/destroy", what);
    return false;
  }
  return true;
}

// What is wrong with a field's default for its own type and allowed values, or "".
// Canonical numbers (ms, bytes), as plugin-authoring.md asks: the SDK's harness hands
// defaults to the plugin as written, so "30s" worked in the host and failed there.
std::string not_canonical(const std::string& v, std::optional<int64_t> parsed, const char* in) {
  if (config::parse_int(v).has_value()) return {};
  if (!parsed) return "is not a value of its type";
  return fmt::format("is not canonical: write it in {} (e.g. '{}')", in, *parsed);
}

std::string bad_default(const Field& f) {
  if (!f.has_default) return {};
  const std::string& v = f.default_value;
  bool ok = true;
  switch (f.type) {
    case EX_CFG_INT: ok = config::parse_int(v).has_value(); break;
    case EX_CFG_DOUBLE: ok = config::parse_double(v).has_value(); break;
    case EX_CFG_BOOL: ok = config::parse_bool(v).has_value(); break;
    case EX_CFG_DURATION:
      if (auto why = not_canonical(v, config::parse_duration_ms(v), "milliseconds"); !why.empty()) return why;
      break;
    case EX_CFG_SIZE:
      if (auto why = not_canonical(v, config::parse_size_bytes(v), "bytes"); !why.empty()) return why;
      break;
    default: break;
  }
  if (!ok) return "is not a value of its type";
  // Lists and maps have no single value to compare; an empty default means "none".
  if (!f.allowed.empty() && !v.empty() && f.type != EX_CFG_LIST && f.type != EX_CFG_MAP &&
      std::find(f.allowed.begin(), f.allowed.end(), v) == f.allowed.end())
    return "is not one of its allowed values";
  return {};
}

bool read_component(const ex_component& c, Component* out, std::string* why) {
  if (c.struct_size < kMinComponent) {
    *why = fmt::format("component struct too small ({} bytes)", c.struct_size);
    return false;
  }
  if (c.name == nullptr || *c.name == '\0') {
    *why = "component without a name";
    return false;
  }
  out->kind = static_cast<ex_component_kind>(c.kind);
  out->name = c.name;
  out->doc = c.doc ? c.doc : "";
  // Arrays are walked with the plugin's own element size, so a plugin built against a
  // newer minor (longer structs) is read correctly.
  if (c.field_count > 0 && c.fields == nullptr) {
    *why = fmt::format("component '{}': fields is NULL but field_count is {}", out->name, c.field_count);
    return false;
  }
  uint32_t fstride = c.field_count > 0 ? c.fields[0].struct_size : 0;
  if (c.field_count > 0 && fstride < kMinField) {
    *why = fmt::format("component '{}': config field struct too small", out->name);
    return false;
  }
  for (size_t i = 0; i < c.field_count; ++i) {
    const ex_config_field& f = *reinterpret_cast<const ex_config_field*>(
        reinterpret_cast<const char*>(c.fields) + i * fstride);
    if (f.struct_size < kMinField || f.key == nullptr) {
      *why = fmt::format("component '{}': malformed config field #{}", out->name, i);
      return false;
    }
    Field fd;
    fd.key = f.key;
    // Keys are written in YAML and shown in `exactly plugins` and its markdown table.
    if (fd.key.empty() || std::any_of(fd.key.begin(), fd.key.end(), [](char ch) {
          return static_cast<unsigned char>(ch) <= ' ' || ch == 0x7f || ch == '|';
        })) {
      *why = fmt::format("component '{}': config field #{} has an empty key or one with a space, a "
                         "control character or '|'",
                         out->name, i);
      return false;
    }
    if (f.type < EX_CFG_STRING || f.type > EX_CFG_MAP) {
      *why = fmt::format("component '{}': config field '{}' has unknown type {}", out->name, fd.key, f.type);
      return false;
    }
    if (f.required != 0 && f.default_value != nullptr) {
      *why = fmt::format("component '{}': config field '{}' is required and has a default (which "
                         "would never be used): drop one",
                         out->name, fd.key);
      return false;
    }
    fd.type = static_cast<ex_config_type>(f.type);
    fd.required = f.required != 0;
    fd.has_default = f.default_value != nullptr;
    if (fd.has_default) fd.default_value = f.default_value;
    fd.doc = f.doc ? f.doc : "";
    if (f.allowed)
      for (const char* const* a = f.allowed; *a; ++a) fd.allowed.emplace_back(*a);
    // A field of a plugin built for 1.5 or older ends before its flags.
    const uint32_t flags =
        f.struct_size >= offsetof(ex_config_field, flags) + sizeof(f.flags) ? f.flags : 0;
    fd.exclusive_path = (flags & EX_CFG_EXCLUSIVE_PATH) != 0;
    for (const auto& other : out->fields)
      if (other.key == fd.key) {
        *why = fmt::format("component '{}': config field '{}' is declared twice", out->name, fd.key);
        return false;
      }
    // A default the schema itself refuses would be blamed on the user's YAML, and only
    // once a pipeline uses the component.
    if (std::string bad = bad_default(fd); !bad.empty()) {
      *why = fmt::format("component '{}': config field '{}': default '{}' {}", out->name, fd.key,
                         fd.default_value, bad);
      return false;
    }
    out->fields.push_back(std::move(fd));
  }
  std::string what = fmt::format("{} '{}'", kind_name(out->kind), out->name);
  switch (out->kind) {
    case EX_KIND_SOURCE: return copy_vtable(c.vtable, &out->source, why, what.c_str());
    case EX_KIND_TRANSFORM: return copy_vtable(c.vtable, &out->transform, why, what.c_str());
    case EX_KIND_SINK: return copy_vtable(c.vtable, &out->sink, why, what.c_str());
  }
  *why = fmt::format("component '{}' has unknown kind {}", out->name, c.kind);
  return false;
}

}  // namespace

namespace {
std::atomic<bool> g_keep_loaded{false};
}

void keep_libraries_loaded() { g_keep_loaded.store(true); }

Library::~Library() {
  const bool late = late_calls->load();
  if (!late && !g_keep_loaded.load()) return;  // the members unload it as usual
  if (late)
    log::warn("plugins", "{} stays loaded: its code called the host after the objects it "
              "made were destroyed (a thread a plugin did not stop); unloading it would crash "
              "the host", path);
  // Leaked on purpose: unmapping the code, or freeing the host objects it points at,
  // would crash a thread still running in it.
  new boost::dll::shared_library(std::move(handle));
  new std::deque<std::shared_ptr<void>>(std::move(kept_));
}

void Library::keep_until_unloaded(std::shared_ptr<void> object) {
  std::lock_guard<std::mutex> g(kept_mu_);
  kept_.push_back(std::move(object));
  if (kept_.size() > kKept) kept_.pop_front();
}

std::shared_ptr<Library> Registry::load(const std::string& path, std::string* why_out) {
  std::string why;
  auto fail = [&](std::string reason) -> std::shared_ptr<Library> {
    failures_.push_back({path, reason});
    if (why_out) *why_out = reason;
    return nullptr;
  };
  // Loading runs the library's constructors: only a plugin's, never any .so's.
  if (!exports_symbol(path, EX_PLUGIN_ENTRY_SYMBOL, &why))
    return fail(why.empty() ? fmt::format("not an exactly plugin: no exported function '{}'",
                                          EX_PLUGIN_ENTRY_SYMBOL)
                            : "cannot load: " + why);
  auto lib = std::make_shared<Library>();
  lib->path = path;
  // Loading runs the library's code (its static initializers, then its descriptor): a
  // crash there is named by the fatal-signal report, a hang by the stage watchdog and the
  // stop's report, as for any plugin call. Both said nothing before (QA: exit 139 or a
  // silent hang of `validate` for a library on plugin.path that no pipeline used).
  static const std::string no_pipeline;
  const std::string label = "plugin library " + path;
  const engine::CallSite site{&no_pipeline, &lib->path, &label};
  try {
    engine::InPluginCall call(site, "load (its static initializers)");
    // rtld_local: plugins must not see each other's symbols (two plugins may bundle
    // different copies of a library).
    lib->handle.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const boost::system::system_error& e) {
    // Boost appends its error code's text to dlerror()'s, which for dlopen is errno left
    // over from elsewhere ("undefined symbol: x): Bad file descriptor", QA): dropped.
    std::string what = e.what();
    const std::string tail = ": " + e.code().message();
    if (what.size() > tail.size() && what.compare(what.size() - tail.size(), tail.size(), tail) == 0)
      what.resize(what.size() - tail.size());
    return fail(fmt::format("cannot load: {}", what));
  } catch (const std::exception& e) {
    return fail(fmt::format("cannot load: {}", e.what()));
  }
  note_loaded(lib);
  if (!lib->handle.has(EX_PLUGIN_ENTRY_SYMBOL))
    return fail(fmt::format("not an exactly plugin: no exported function '{}'",
                            EX_PLUGIN_ENTRY_SYMBOL));
  auto entry = lib->handle.get<const ex_plugin_descriptor*(uint32_t)>(EX_PLUGIN_ENTRY_SYMBOL);
  const ex_plugin_descriptor* d = nullptr;
  {
    engine::InPluginCall call(site, EX_PLUGIN_ENTRY_SYMBOL);
    d = entry(EX_ABI_VERSION);
  }
  if (d == nullptr)
    return fail(fmt::format("the plugin refused this host's ABI {}.{}", EX_ABI_VERSION_MAJOR,
                            EX_ABI_VERSION_MINOR));
  uint32_t major = d->abi_version >> 16, minor = d->abi_version & 0xffff;
  if (major != EX_ABI_VERSION_MAJOR || minor > EX_ABI_VERSION_MINOR)
    return fail(fmt::format(
        "built for plugin ABI {}.{}, this host speaks {}.{} (rebuild the plugin against this "
        "SDK, or upgrade the host)",
        major, minor, EX_ABI_VERSION_MAJOR, EX_ABI_VERSION_MINOR));
  if (d->struct_size < kMinDescriptor)
    return fail(fmt::format("descriptor too small ({} bytes)", d->struct_size));
  if (std::string bad = build_fact_mismatch(*d); !bad.empty()) return fail(bad);
  lib->abi_version = d->abi_version;
  lib->name = d->name ? d->name : fs::path(path).stem().string();
  lib->version = d->version ? d->version : "";
  if (d->component_count > 0 && d->components == nullptr)
    return fail(fmt::format("components is NULL but component_count is {}", d->component_count));
  uint32_t cstride = d->component_count > 0 ? d->components[0].struct_size : 0;
  if (d->component_count > 0 && cstride < kMinComponent)
    return fail(fmt::format("component struct too small ({} bytes)", cstride));
  for (size_t i = 0; i < d->component_count; ++i) {
    Component c;
    const auto& raw = *reinterpret_cast<const ex_component*>(
        reinterpret_cast<const char*>(d->components) + i * cstride);
    if (!read_component(raw, &c, &why)) return fail(why);
    lib->components.push_back(std::move(c));
  }
  for (size_t i = 0; i < lib->components.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (lib->components[i].kind == lib->components[j].kind && lib->components[i].name == lib->components[j].name)
        return fail(fmt::format("{} '{}' is declared twice in this library",
                                kind_name(lib->components[i].kind), lib->components[i].name));
  for (auto& c : lib->components) c.library = lib.get();
  // A component name may exist once per kind across all libraries: the first wins.
  for (auto& c : lib->components) {
    Found f = find(c.kind, c.name);
    if (f.component != nullptr)
      return fail(fmt::format("{} '{}' is already provided by {}", kind_name(c.kind), c.name,
                              f.library->path));
  }
  libs_.push_back(lib);
  return lib;
}

void Registry::scan(const std::vector<std::string>& dirs) {
  std::set<std::string> seen;
  for (auto& l : libs_) seen.insert(fs::weakly_canonical(l->path).string());
  for (const auto& d : dirs) {
    searched_.push_back(d);
    std::error_code ec;
    if (!insecure_) {
      if (std::string why = untrusted_reason(d, true); !why.empty()) {
        failures_.push_back({d.empty() ? "(empty)" : d, why});
        continue;
      }
    }
    if (!fs::is_directory(d, ec)) {
      // The built-in places may well be absent; any other entry reaching here came from
      // $EXACTLY_PLUGIN_PATH (plugin.path and --plugin-path are checked before), where a
      // typo left only "unknown plugin" to go on (QA).
      const auto builtin = builtin_plugin_dirs();
      if (std::find(builtin.begin(), builtin.end(), d) == builtin.end())
        failures_.push_back({d, "no such directory (named in $EXACTLY_PLUGIN_PATH)"});
      continue;
    }
    std::vector<fs::path> files;
    for (auto& e : fs::directory_iterator(d, ec))
      if (e.path().extension() == ".so") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      auto canon = fs::weakly_canonical(f).string();
      if (!seen.insert(canon).second) continue;
      if (!insecure_) {
        if (std::string why = untrusted_reason(f.string(), false); !why.empty()) {
          failures_.push_back({f.string(), why});
          continue;
        }
      }
      load(f.string());
    }
  }
}

Registry::Found Registry::find(ex_component_kind kind, const std::string& name) const {
  for (auto& l : libs_)
    for (auto& c : l->components)
      if (c.kind == kind && c.name == name) return {&c, l};
  return {};
}

std::vector<std::string> Registry::names(ex_component_kind kind) const {
  std::vector<std::string> out;
  for (auto& l : libs_)
    for (auto& c : l->components)
      if (c.kind == kind) out.push_back(c.name);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> default_plugin_path() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("EXACTLY_PLUGIN_PATH")) {
    std::string s(env);
    size_t pos = 0;
    while (pos <= s.size()) {
      size_t c = s.find(':', pos);
      if (c == std::string::npos) c = s.size();
      // Empty elements are kept: scan() refuses them (they would mean ".").
      out.push_back(s.substr(pos, c - pos));
      pos = c + 1;
    }
  }
  for (auto& d : builtin_plugin_dirs()) out.push_back(d);
  return out;
}

std::vector<std::string> builtin_plugin_dirs() {
  auto exe_dir = boost::dll::program_location().parent_path();
  return {(exe_dir / "plugins").string(), (exe_dir.parent_path() / "lib" / "exactly" / "plugins").string()};
}

}  // namespace exactly::plugin
