// Writes a table of written claims into the claims column family as one sorted SST file
// (SstFileWriter + IngestExternalFile): one file per fold instead of one memtable insert
// per id. Runs on the store's fold thread; reads `claims` only.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "key_order.hpp"
#include "round_claims.hpp"

namespace exactly::dedupe {

// `live` indexes the claims to write (those not evicted); `order` is scratch space.
// `pace`, when set, is called with the share of claims written so far, every few
// thousand claims; it may sleep. On failure the file at `path` is removed.
rocksdb::Status fold_claims(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                            const rocksdb::Options& sst_options, const std::string& path,
                            const RoundClaims& claims, const std::vector<uint32_t>& live,
                            uint32_t fp_bytes, KeyOrder& order,
                            const std::function<void(double)>& pace = {});

}  // namespace exactly::dedupe
