// RocksDB options of a dedupe store. One place, so the benchmark's reference loop
// (tests/bench/dedupe) opens its database with exactly what the plugin uses.
#pragma once

#include <rocksdb/cache.h>
#include <rocksdb/compaction_filter.h>
#include <rocksdb/options.h>

#include <cstddef>
#include <memory>
#include <string>

namespace exactly::dedupe {

struct StoreTuning {
  size_t write_buffer_size = 64u << 20;
  std::string filter = "bloom";  // bloom | ribbon
  // The SST filters only screen what the presence filter lets through (~1% of lookups)
  // across the folded files: 9 bits instead of 10 saved 0.125 bytes per key (29.89
  // instead of 30.06 at 100M keys) with no CPU difference measured (docs/benchmarks.md).
  double filter_bits_per_key = 9;
  std::string compression = "zstd";  // of the bottommost level: none | lz4 | zstd
  bool background_fold = true;  // fold claims into SST files on a thread of the store's own
  // Folded files kept as they are (no compaction; whole files dropped once evicted)
  // before the store compacts (size-tiered); 0 = compact from the start.
  size_t fold_files_max = 256;
  // New stores fold into claims files of their own (claims_file.hpp) instead of SST
  // files; a store keeps the format it was made with.
  bool own_files = true;
  // Own files kept before neighbouring ones are merged (claims.files.max).
  size_t own_files_max = 256;
};

inline constexpr const char* kSeqColumnFamily = "seq";

rocksdb::DBOptions make_db_options(const StoreTuning& t);
// How the claims column family is laid out on disk: a row of folded files that are
// never rewritten (fold_files.hpp; stores made since), or a leveled LSM (stores made
// before, which cannot be reopened with a single level).
enum class ClaimsLayout { folded, leveled };

// `eviction` drops claims below the store's floor during compactions; may be null.
rocksdb::ColumnFamilyOptions make_claims_options(const StoreTuning& t,
                                                 const std::shared_ptr<rocksdb::Cache>& cache,
                                                 const rocksdb::CompactionFilter* eviction,
                                                 ClaimsLayout layout = ClaimsLayout::folded);
rocksdb::ColumnFamilyOptions make_seq_options(const StoreTuning& t,
                                              const std::shared_ptr<rocksdb::Cache>& cache);
// Claims gathered in memory (and in the sequence index's memtable) before they are
// folded into the claims column family as one SST file.
inline size_t index_threshold(const StoreTuning& t) {
  size_t n = t.write_buffer_size / 48;
  return n < 1024 ? 1024 : n;
}
rocksdb::ReadOptions make_lookup_read_options();
// `rocksdb.compression` as RocksDB's type: of the bottom level, and of folded files
// that are never compacted.
rocksdb::CompressionType fold_compression(const StoreTuning& t);
// The options SstFileWriter writes a folded file with: `base` (the claims column
// family's) compressed with `c` at zstd's fast level 1.
rocksdb::Options fold_sst_options(rocksdb::Options base, rocksdb::CompressionType c);

}  // namespace exactly::dedupe
