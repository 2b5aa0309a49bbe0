#include <exactly/sdk.hpp>

#include "dedupe_transform.hpp"

namespace {

using exactly::sdk::field;
using exactly::sdk::required;

const char* const kConflict[] = {"duplicate", "reject", "stop", nullptr};
const char* const kBehind[] = {"fail", "ignore", nullptr};
const char* const kChangelog[] = {"auto", "on", "off", nullptr};
const char* const kFilters[] = {"bloom", "ribbon", nullptr};
const char* const kCompression[] = {"none", "lz4", "zstd", nullptr};

const ex_config_field kFields[] = {
    field("id.key", EX_CFG_BOOL,
          "the id is the record key (set exactly one of id.key, id.header, id.json)", "false"),
    field("id.header", EX_CFG_STRING, "the id is the value of this record header"),
    field("id.json", EX_CFG_STRING,
          "the id is at this JSON pointer in the value, e.g. /messageId (string or number)"),
    field("id.max.bytes", EX_CFG_INT,
          "longer ids are record errors; canonical UUID text is stored as 16 bytes", "128"),
    required("state.dir", EX_CFG_STRING,
             "directory of the stores: one RocksDB per input partition, in a subdirectory "
             "named after the partition"),
    field("changelog", EX_CFG_STRING,
          "keep the claims in a changelog written by the sink in the round's commit (for "
          "Kafka: the same transaction as the output and the offsets), so a partition that "
          "moves to another host is restored there: auto = when the sink can, on = required, "
          "off = local stores only (a moved partition is refused)",
          "auto", kChangelog),
    field("changelog.topic", EX_CFG_STRING,
          "the changelog's name (a topic for the kafka sink); default "
          "exactly-<pipeline>-<stage>-changelog. Created compacted with one partition per "
          "input partition when missing"),
    field("changelog.catch.up.timeout", EX_CFG_DURATION,
          "how long a restore waits for the changelog to reach the group's committed offset "
          "(a previous owner's last transaction still completing) before it counts as behind",
          "30000"),
    field("standby.budget", EX_CFG_DURATION,
          "most time per second the pipeline thread spends bringing standby copies up to date "
          "(partitions the kafka source's standby.replicas asks this host to keep warm); 0 = "
          "keep no standby copies",
          "200"),
    field("on.conflict", EX_CFG_STRING,
          "same id, different content: duplicate = drop and count, reject = record error, "
          "stop = fail the pipeline",
          "duplicate", kConflict),
    field("on.store.behind", EX_CFG_STRING,
          "a store (or changelog) older than the committed position (deleted, truncated, or "
          "written without a changelog): fail = refuse the partition and say how to repair, "
          "ignore = warn and go on",
          "fail", kBehind),
    field("store.behind.tolerance", EX_CFG_INT,
          "offsets the committed position may run ahead of the store before it counts as "
          "behind (only needed for stores written before source positions were recorded)",
          "0"),
    field("retention.max.keys", EX_CFG_INT,
          "keep at most this many ids per partition, evicting the oldest first; 0 = unbounded",
          "0"),
    field("retention.max.bytes", EX_CFG_SIZE,
          "keep each partition's store under about this size, evicting the oldest ids first; "
          "0 = unbounded",
          "0"),
    field("retention.max.age", EX_CFG_DURATION,
          "evict ids claimed longer ago than this; 0 = no age limit", "0"),
    field("fingerprint.bytes", EX_CFG_INT,
          "bytes of the value hash kept per id to tell duplicates from conflicts: 4 (misses "
          "one conflict in 4 billion), 8, or 0 (no conflict detection)",
          "4"),
    field("rocksdb.block.cache.size", EX_CFG_SIZE,
          "block cache shared by this stage's stores", "536870912"),
    field("rocksdb.write.buffer.size", EX_CFG_SIZE,
          "per store: claims gathered in memory before they are folded into the store as "
          "one SST file (about this size / 48 claims), and the memtable size",
          "67108864"),
    field("rocksdb.filter", EX_CFG_STRING,
          "SST filter: bloom (fastest probes) or ribbon (about 30% smaller)", "bloom", kFilters),
    field("rocksdb.filter.bits.per.key", EX_CFG_DOUBLE, "filter bits per id", "10"),
    field("rocksdb.compression", EX_CFG_STRING,
          "compression of the bottommost level (where most ids live)", "zstd", kCompression),
};

}  // namespace

EXACTLY_PLUGIN("dedupe", "0.1.0",
               exactly::sdk::transform<exactly::dedupe::DedupeTransform>(
                   "dedupe",
                   "Drops records whose id was already seen in the same input partition; "
                   "owner-aware (a replay of the first record is emitted again), RocksDB "
                   "state per partition",
                   kFields))
