#include "plugin/replaced_library.hpp"

#include "plugin/loader.hpp"
#include "util/log.hpp"

#include <sys/stat.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace exactly::plugin {
namespace {
struct Loaded {
  std::weak_ptr<Library> newest;  // a Library whose handle holds the code loaded from the path
  std::pair<dev_t, ino_t> file{};  // the file that code was loaded from
};
}  // namespace

void note_loaded(const std::shared_ptr<Library>& lib) {
  struct stat st {};
  if (::stat(lib->path.c_str(), &st) != 0) return;
  const std::pair<dev_t, ino_t> now{st.st_dev, st.st_ino};
  static std::mutex mu;
  static std::map<std::string, Loaded> loaded;
  static std::set<std::pair<std::string, ino_t>> said;
  std::lock_guard<std::mutex> g(mu);
  Loaded& e = loaded[lib->path];
  if (e.newest.expired()) {  // nothing from the path was loaded: this is the file's code
    e = {lib, now};
    return;
  }
  e.newest = lib;  // the same code, through the handle dlopen() handed back
  if (e.file != now && said.insert({lib->path, now.second}).second)
    log::warn("plugins",
              "{} was replaced on disk after this host loaded it: the host goes on with the version it "
              "loaded (a library path stays bound to the code loaded from it while anything from it "
              "runs); restart the host to use the new one",
              lib->path);
}

}  // namespace exactly::plugin
