// Claims a store made while its changelog was off (changelog: off, or auto beside a sink
// that keeps none) never reach the changelog: turned on again, the changelog lacks them,
// and a host that restores the partition from it (after a move, or with this store lost)
// lets duplicates of those ids through. Nothing said so (QA: off for a while, on again,
// the store moved away as the docs advise: 59,983 duplicated). A file in the store,
// UNLOGGED_SINCE, keeps the store's next sequence number from the first open without a
// changelog; the open that turns the changelog on compares it with the store's and warns.
#pragma once

#include <exactly/sdk.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace exactly::dedupe {

// Records `next_seq` unless the store has a record already (the oldest one counts).
sdk::Status mark_unlogged(const std::string& store_dir, uint64_t next_seq);
// The recorded sequence number, if any (an unreadable file reads as 0: every claim).
std::optional<uint64_t> unlogged_since(const std::string& store_dir);
void clear_unlogged(const std::string& store_dir);

}  // namespace exactly::dedupe
