// YAML text -> validated model: config::load on one file, as `exactly validate` runs it,
// the size, document and alias-expansion limits (config/yaml_guard.hpp) included. The
// components resolve against the real plugins ($EXACTLY_PLUGIN_PATH), so their own
// checks (ABI 1.3 validate) run on whatever the text makes valid.
#include "config/loader.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using namespace exactly;

namespace {

const std::string& file_path() {
  static const std::string path = [] {
    char tmpl[] = "/tmp/exactly-fuzz-config-XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (d == nullptr) std::abort();
    return std::string(d) + "/p.yaml";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream f(file_path(), std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  // One registry for the run: libraries stay loaded, later scans skip them.
  static plugin::Registry registry;
  auto r = config::load({file_path()}, registry);
  // Whatever the input, the result is either errors with a place, or a model.
  for (auto& e : r.errors)
    if (e.message.empty()) std::abort();
  if (r.ok() && r.spec.pipelines.empty()) std::abort();
  return 0;
}
