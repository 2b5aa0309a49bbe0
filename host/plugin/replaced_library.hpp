// A library replaced on disk (a new version moved over its path) while the host still
// runs code loaded from that path: dlopen() of the same path hands back the library
// already loaded, so a reload goes on with the old version, and a component only the new
// version has is "unknown" (QA). Said once per replacement, naming the file and what to do.
#pragma once

#include <memory>

namespace exactly::plugin {

class Library;

// Called for each library a registry loaded. Warns when the file at its path is no longer
// the one whose code is loaded (the older Library from that path still alive).
void note_loaded(const std::shared_ptr<Library>& lib);

}  // namespace exactly::plugin
