#include "store_options.hpp"

#include <algorithm>

#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>

namespace exactly::dedupe {

rocksdb::DBOptions make_db_options(const StoreTuning& t) {
  rocksdb::DBOptions o;
  o.create_if_missing = true;
  o.create_missing_column_families = true;
  // Filters and indexes stay pinned in the table readers: every lookup of a new id
  // touches a filter of each level, and a cache round trip per probe would cost more
  // than the probe.
  o.max_open_files = -1;
  o.max_background_jobs = 2;
  o.bytes_per_sync = 1u << 20;
  o.keep_log_file_num = 3;
  o.max_log_file_size = 8u << 20;
  // The seq column family is written every round but flushes rarely; this bounds how
  // long it can pin old WAL files.
  o.max_total_wal_size = 4 * t.write_buffer_size;
  o.avoid_unnecessary_blocking_io = true;
  o.skip_stats_update_on_db_open = true;
  // RocksDB reserves 4 MiB of disk for each MANIFEST; a store's grows a few hundred bytes
  // per fold. One store per partition: 4 MiB each was most of a small store's disk use
  // (QA: 5.9 MB on disk for 1.7 MB of claims), and 4 GB on a host with 1,000 partitions.
  o.manifest_preallocation_size = 256u << 10;
  return o;
}

rocksdb::CompressionType fold_compression(const StoreTuning& t) {
  if (t.compression == "lz4") return rocksdb::kLZ4Compression;
  if (t.compression == "zstd") return rocksdb::kZSTD;
  return rocksdb::kNoCompression;
}

rocksdb::Options fold_sst_options(rocksdb::Options base, rocksdb::CompressionType c) {
  // SstFileWriter compresses with the bottommost setting unless it is disabled. A folded
  // file is where its claims live for good: compressed at a fast level (zstd's default
  // level cost more CPU than the rest of the fold).
  base.bottommost_compression = rocksdb::kDisableCompressionOption;
  base.compression = c;
  base.compression_opts.level = 1;
  return base;
}

rocksdb::ColumnFamilyOptions make_claims_options(const StoreTuning& t,
                                                 const std::shared_ptr<rocksdb::Cache>& cache,
                                                 const rocksdb::CompactionFilter* eviction,
                                                 ClaimsLayout layout) {
  rocksdb::ColumnFamilyOptions o;
  rocksdb::BlockBasedTableOptions b;
  b.block_cache = cache;
  b.cache_index_and_filter_blocks = false;
  b.filter_policy.reset(t.filter == "ribbon"
                            ? rocksdb::NewRibbonFilterPolicy(t.filter_bits_per_key)
                            : rocksdb::NewBloomFilterPolicy(t.filter_bits_per_key, false));
  b.whole_key_filtering = true;
  b.format_version = 5;
  // 8 KiB blocks: zstd finds more to share in a block of claims than in 4 KiB (29.9
  // instead of 30.5 bytes per key at 10M keys, docs/benchmarks.md) and the index halves;
  // a lookup that passes the filter binary-searches a block twice the size (16 KiB
  // saved 0.3 bytes more but slowed those lookups further).
  b.block_size = 8192;
  // Keys are stored whole only every 64th entry (default 16): random ids share ~2.5
  // leading bytes with their neighbour in a file, and the restart array shrinks (29.64
  // instead of 29.90 bytes per key at 10M keys). Only a lookup that passes the presence
  // filter and an SST filter (duplicates, <1% of records) scans the longer run.
  b.block_restart_interval = 64;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(b));
  // Most lookups are misses (new ids), so the bottommost level needs its filters too.
  o.optimize_filters_for_hits = false;
  // Claims reach this family as SST files folded by the store, not through its
  // memtable; the write buffer size only scales the levels.
  o.write_buffer_size = t.write_buffer_size;
  o.level_compaction_dynamic_level_bytes = true;
  o.max_bytes_for_level_base = 4 * t.write_buffer_size;
  o.target_file_size_base = t.write_buffer_size;
  // Ids are random: nothing compresses but RocksDB's own per-entry framing, which only
  // pays off where most data lives. Upper levels stay uncompressed for CPU.
  o.compression = rocksdb::kNoCompression;
  o.bottommost_compression = fold_compression(t);
  o.compaction_filter = eviction;
  if (layout == ClaimsLayout::leveled) return o;
  // A row of folded files (fold_files.hpp): one level, so that every fold lands in it
  // and RocksDB can drop its oldest file whole; no compaction until the store leaves
  // that layout, which turns on (size-tiered) compactions. Level-0 stalls would only
  // hold the fold thread.
  o.compaction_style = rocksdb::kCompactionStyleUniversal;
  o.num_levels = 1;
  o.disable_auto_compactions = true;
  o.level0_slowdown_writes_trigger = 1 << 30;
  o.level0_stop_writes_trigger = 1 << 30;
  return o;
}

rocksdb::ColumnFamilyOptions make_seq_options(const StoreTuning& t,
                                              const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions o;
  rocksdb::BlockBasedTableOptions b;
  b.block_cache = cache;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(b));
  // Chunks carry their round's claims until those are folded into the claims column
  // family; a memtable that holds them until then never writes them to an SST.
  o.write_buffer_size = t.write_buffer_size;
  o.max_write_buffer_number = 2;
  o.compression = rocksdb::kNoCompression;
  return o;
}

rocksdb::ReadOptions make_lookup_read_options() {
  rocksdb::ReadOptions r;
  r.ignore_range_deletions = true;  // the store never writes range tombstones
  return r;
}

}  // namespace exactly::dedupe
