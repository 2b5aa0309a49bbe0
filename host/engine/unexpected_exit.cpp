#include "engine/unexpected_exit.hpp"

#include "engine/plugin_call.hpp"

#include <exactly/plugin_abi.h>

#include <dlfcn.h>
#include <execinfo.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace exactly::engine {
namespace {

const char* g_consequence = "";

// The first library on the calling stack that is an exactly plugin (exports the entry
// symbol): names the culprit also when exit() came from a thread of the plugin's own.
std::string plugin_on_stack() {
  void* frames[64];
  const int n = backtrace(frames, 64);
  for (int i = 0; i < n; ++i) {
    Dl_info info{};
    if (dladdr(frames[i], &info) == 0 || info.dli_fname == nullptr) continue;
    void* h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (h == nullptr) continue;
    const bool plugin = dlsym(h, EX_PLUGIN_ENTRY_SYMBOL) != nullptr;
    dlclose(h);
    if (plugin) return info.dli_fname;
  }
  return {};
}

void on_exit_called(int status, void*) {
  std::string where;
  if (const char* label = current_call_label())
    where = std::string(" in ") + label + ", during " + current_call_fn() + "()";
  else
    where = " outside any plugin call on this thread";
  const std::string lib = plugin_on_stack();
  if (!lib.empty()) where += "; called from " + lib;
  std::fprintf(stderr,
               "exactly: exit(%d) called%s: the host did not ask for it; %s; exit code %d\n",
               status, where.c_str(), g_consequence, kExitByPlugin);
  std::fflush(nullptr);
  _exit(kExitByPlugin);
}

}  // namespace

void install_unexpected_exit_report(const char* consequence) {
  g_consequence = consequence;
  static bool installed = false;
  if (installed) return;
  installed = true;
  on_exit(&on_exit_called, nullptr);
}

}  // namespace exactly::engine
