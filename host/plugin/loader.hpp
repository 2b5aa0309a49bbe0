#pragma once
// Finds plugin libraries on plugin.path, checks their ABI, and keeps each library
// loaded for as long as anything made from it lives (every instance holds a
// shared_ptr<Library>). Descriptors and vtables are copied into host-owned structs
// up to the size both sides know, so a plugin built against an older minor ABI works.
#include <exactly/plugin_abi.h>

#include <boost/dll/shared_library.hpp>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace exactly::plugin {

struct Field {
  std::string key;
  ex_config_type type = EX_CFG_STRING;
  bool required = false;
  bool has_default = false;
  std::string default_value;
  std::string doc;
  std::vector<std::string> allowed;
  // EX_CFG_EXCLUSIVE_PATH (ABI 1.6): checked across the host's pipelines at load.
  bool exclusive_path = false;
};

class Library;

struct Component {
  ex_component_kind kind{};
  std::string name;
  std::string doc;
  std::vector<Field> fields;
  // Exactly one is meaningful, per kind; zero-filled beyond what the plugin knows.
  ex_source_vtable source{};
  ex_transform_vtable transform{};
  ex_sink_vtable sink{};
  Library* library = nullptr;  // owner; the registry keeps it alive

  const Field* field(const std::string& key) const;
};

class Library {
 public:
  std::string path;
  std::string name;
  std::string version;
  uint32_t abi_version = 0;
  std::vector<Component> components;
  boost::dll::shared_library handle;  // unloaded when the last shared_ptr goes

  // Host objects that code of this library may still point at after the host is done with
  // them (a thread a plugin did not stop): freed with the library, once none of its code
  // can run. At most kKept, the oldest freed first, so that a pipeline restarting for days
  // does not grow without bound.
  static constexpr size_t kKept = 1024;
  void keep_until_unloaded(std::shared_ptr<void> object);
  // Set by a host object above when code of this library called it after the host was
  // done with it: the library is then never unloaded (see ~Library).
  const std::shared_ptr<std::atomic<bool>> late_calls = std::make_shared<std::atomic<bool>>(false);

  Library() = default;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library();

 private:
  std::mutex kept_mu_;
  std::deque<std::shared_ptr<void>> kept_;
};

// From here on no library is unloaded (the host is exiting: a thread a plugin did not
// stop may still run its code).
void keep_libraries_loaded();

struct LoadFailure {
  std::string path;
  std::string reason;
};

const char* kind_name(ex_component_kind k);

class Registry {
 public:
  // Scans each directory (non-recursive) for *.so and loads every plugin found.
  // Failures are recorded, not thrown: one bad library must not hide the others.
  void scan(const std::vector<std::string>& dirs);
  // Load from directories and files that others can write (plugin.insecure: true).
  void set_insecure(bool on) { insecure_ = on; }
  // Loads one library; returns nullptr and records the failure on error.
  std::shared_ptr<Library> load(const std::string& path, std::string* why = nullptr);

  // The component and a reference that keeps its library loaded.
  struct Found {
    const Component* component = nullptr;
    std::shared_ptr<Library> library;
  };
  Found find(ex_component_kind kind, const std::string& name) const;
  std::vector<std::string> names(ex_component_kind kind) const;

  const std::vector<std::shared_ptr<Library>>& libraries() const { return libs_; }
  const std::vector<LoadFailure>& failures() const { return failures_; }
  const std::vector<std::string>& searched() const { return searched_; }

 private:
  bool insecure_ = false;
  std::vector<std::shared_ptr<Library>> libs_;
  std::vector<LoadFailure> failures_;
  std::vector<std::string> searched_;
};

// Default search path: $EXACTLY_PLUGIN_PATH (colon separated), then the folder
// `plugins` beside the binary, then ../lib/exactly/plugins relative to it.
std::vector<std::string> default_plugin_path();
// The places beside the binary: <bin>/plugins and <bin>/../lib/exactly/plugins.
std::vector<std::string> builtin_plugin_dirs();

}  // namespace exactly::plugin
