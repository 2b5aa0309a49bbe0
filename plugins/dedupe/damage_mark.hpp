// A store found damaged while running is marked with a file in its directory, because
// RocksDB opens such a store without complaint (it checks a block only when it reads it)
// and the pipeline would restart into the same failed read for ever. The next open sees
// the mark and refuses the store as damaged; `on.store.damaged` then decides (set aside
// and restored from the changelog, or refused naming the directory).
#pragma once

#include <string>

namespace exactly::dedupe {

std::string damage_mark_path(const std::string& dir);
// True when the store is marked; `why` is what the mark says.
bool read_damage_mark(const std::string& dir, std::string& why);
// False (with `error`) when the mark could not be written.
bool write_damage_mark(const std::string& dir, const std::string& why, std::string& error);
// Removes the mark (a store wiped for a restore starts clean); true when none is left.
bool clear_damage_mark(const std::string& dir);

}  // namespace exactly::dedupe
