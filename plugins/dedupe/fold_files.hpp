// The claims column family as a row of folded files. Ids are random, so every fold's
// file overlaps all the others and any compaction rewrites every claim it touches; a
// store that only ever adds whole files and drops whole files never rewrites a claim.
// Each fold labels its file with the end of the claim sequence it holds, so once the
// store's floor passes that end the file can go whole. A store leaves this layout for
// compaction (size-tiered) when it holds too many files (lookups probe each file's filter)
// or a file it did not fold this way (written by an earlier version, or compacted).
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/table_properties.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace exactly::dedupe {

// Table property collector factory for one fold: labels its file with `seq_end`.
std::shared_ptr<rocksdb::TablePropertiesCollectorFactory> fold_label(uint64_t seq_end);

struct FoldFile {
  std::string name;  // as RocksDB names it, e.g. "/000012.sst"
  int level = 0;
  uint64_t seq_end = 0;  // every claim in it has seq < this; 0 = no fold label
  // Among level-0 files, RocksDB drops only the oldest (it keeps their order).
  bool oldest_in_level0 = false;
};

struct FoldFiles {
  std::vector<FoldFile> files;  // in label order, oldest claims first
  bool unlabelled = false;      // some file carries no fold label
};

FoldFiles inspect_fold_files(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf);

}  // namespace exactly::dedupe
