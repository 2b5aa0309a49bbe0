// RocksDB starts a new write-ahead log at every open and deletes the old ones only at a
// flush that passes them. A store opened and killed before its first write (a host in a
// crash loop, a kill during assignment) leaves one zero-length log per start, for good
// while no flush comes: a QA crash loop piled them up. A zero-length log older than the
// open store's current one holds no record and is not written again: removing it loses
// nothing. Only with the store open: then its LOCK is ours, and no other open of the same
// store (another task of the stage, a reload's next instance) can be writing one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace exactly::dedupe {

// Removes the zero-length <number>.log files numbered below `current` (the open store's
// current log) in `dir`; returns how many.
std::size_t remove_empty_wals(const std::string& dir, uint64_t current);

}  // namespace exactly::dedupe
