// How far eviction has removed a store's own claims files, kept in a file of its own
// (`claims-evicted`) that is written before the files go. With it an open can tell the
// oldest claims file gone, or all of them, by eviction from the same gone by hand: the
// floor in the store's meta cannot, because a store with a changelog writes its meta
// without a WAL, and after a kill it can be behind the files eviction had removed.
// Not fsynced: a kill keeps it (the page cache does); a power cut that loses it makes
// the next open take a legitimately evicted file for a missing one, which is handled
// as damage (with a changelog the store is set aside and restored, losing nothing; a
// store without one writes its meta synced, so its floor already covers the files).
#pragma once

#include <cstdint>
#include <string>

namespace exactly::dedupe {

std::string evicted_mark_path(const std::string& dir);

enum class EvictedMark { absent, read, unreadable };
// The label up to which files were evicted (every file labelled at or below it may be gone).
EvictedMark read_evicted_mark(const std::string& dir, uint64_t& label);
// Replaces the mark (a temporary file renamed over it); false with `error` when it fails.
bool write_evicted_mark(const std::string& dir, uint64_t label, std::string& error);
// Removes it (a store wiped for a restore starts clean); true when none is left.
bool clear_evicted_mark(const std::string& dir);

}  // namespace exactly::dedupe
