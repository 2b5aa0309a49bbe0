#include <exactly/sdk.hpp>

#include "dedupe_transform.hpp"
#include "redis_dedupe_transform.hpp"

namespace {

using exactly::sdk::field;
using exactly::sdk::required;

const char* const kConflict[] = {"duplicate", "reject", "stop", nullptr};
const char* const kBehind[] = {"fail", "ignore", nullptr};
const char* const kDamaged[] = {"restore", "fail", nullptr};
const char* const kChangelog[] = {"auto", "on", "off", nullptr};
const char* const kFilters[] = {"bloom", "ribbon", nullptr};
const char* const kCompression[] = {"none", "lz4", "zstd", nullptr};
const char* const kClaimsFormats[] = {"own", "sst", nullptr};

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
          "moves to another host is restored there: auto = when the sink can, on = required "
          "(behind a sink that keeps none, the first assignment fails the pipeline naming this "
          "key; validate cannot see the sink), off = local stores only (a moved partition is "
          "refused)",
          "auto", kChangelog),
    field("changelog.topic", EX_CFG_STRING,
          "the changelog's name (a topic for the kafka sink); default "
          "exactly-<pipeline>-<stage>-changelog. Created compacted with one partition per "
          "input partition when missing, and grown when the input gains partitions"),
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
          "written without a changelog), or a store ahead of a changelog re-created while the "
          "group kept its offsets: fail = refuse the partition and say how to repair, "
          "ignore = warn and go on (keeping such a store)",
          "fail", kBehind),
    field("on.store.damaged", EX_CFG_STRING,
          "a store whose contents cannot be read at open (RocksDB reports corruption or a "
          "file it names is gone, a claims file fails its checksum or is missing, a chunk or "
          "the bookkeeping does not decode), or that a lookup found damaged while running "
          "(marked with a DAMAGED file): "
          "restore = with a changelog, move it aside (<dir>.damaged-<time>) and restore the "
          "partition from the changelog (not again within the hour: a failing disk); fail = "
          "refuse the partition and name the store (always so without a changelog)",
          "restore", kDamaged),
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
          "evict ids claimed longer ago than this, by the owning host's clock when the claim's round committed (not the records' timestamps): an outage or stall longer than this lets duplicates of ids claimed before it through; 0 = no age limit", "0"),
    field("fingerprint.bytes", EX_CFG_INT,
          "bytes of the value hash kept per id to tell duplicates from conflicts: 4 (misses "
          "one conflict in 4 billion), 8, or 0 (no conflict detection)",
          "4"),
    field("rocksdb.block.cache.size", EX_CFG_SIZE,
          "block cache shared by this stage's stores", "536870912"),
    field("rocksdb.write.buffer.size", EX_CFG_SIZE,
          "per store: claims gathered in memory before they are folded into the store as "
          "one claims file (about this size / 48 claims; a store's first fold comes earlier "
          "by up to 7/16 of that, by partition id, so that partitions fold at different "
          "times), and the memtable size",
          "67108864"),
    field("rocksdb.filter", EX_CFG_STRING,
          "SST filter: bloom (fastest probes) or ribbon (about 30% smaller)", "bloom", kFilters),
    field("rocksdb.filter.bits.per.key", EX_CFG_DOUBLE,
          "SST filter bits per id; the presence filter in front already turns ~99% of lookups "
          "away, so 9 (~1.4% false positives per file) costs no measurable CPU over 10 and "
          "saves 0.125 bytes per id", "9"),
    field("rocksdb.compression", EX_CFG_STRING,
          "compression of each folded claims file (and of a compacting store's bottom "
          "level, where most ids live): zstd at level 1 keeps UUID ids under 30 bytes each "
          "on disk; none costs least CPU (about 37 bytes per UUID id); lz4 saves nothing on "
          "random ids (RocksDB keeps a block uncompressed unless it shrinks by 1/8) but still "
          "spends the CPU.",
          "zstd", kCompression),
    field("rocksdb.fold.background", EX_CFG_BOOL,
          "fold gathered claims into the store on a thread of each store's own while the "
          "pipeline goes on (false: on the pipeline thread, inside a commit)",
          "true"),
    field("rocksdb.fold.files.max", EX_CFG_INT,
          "per store: folded SST files kept as they are, never compacted (evicted claims "
          "leave as whole files) until the store holds this many; then it compacts as a "
          "size-tiered LSM (0: from the start)",
          "256"),
    field("claims.format", EX_CFG_STRING,
          "how a new store keeps its folded claims: own (claims files of the store's own, "
          "about 26.6 bytes per UUID id uncompressed and a sixth of the fold CPU of sst; "
          "rocksdb.compression, rocksdb.filter* and rocksdb.fold.files.max do not apply to "
          "them) or sst (RocksDB SST files). A store keeps the format it was made with: a "
          "store that holds SST claims stays sst, one that holds own files stays own.",
          "own", kClaimsFormats),
    field("claims.files.max", EX_CFG_INT,
          "per store, own claims files: past this many, neighbouring files (the run of "
          "min(claims.files.max / 2, 16) with the fewest claims) are merged into one on a "
          "thread of the store's own, so a lookup that passes the presence filter probes at "
          "most about this many file filters. A merged file leaves whole once every claim in "
          "it is evicted. Changes in place on a reload (from each store's next fold)",
          "256"),
};

const char* const kDurability[] = {"none", "aof-always", "replicas", nullptr};

// dedupe-redis: its own component (not `store: redis` on dedupe) because almost no key
// is shared: no state.dir, changelog, standby or rocksdb.*; instead shards, a time
// window and durability. One schema per store keeps unknown-key errors and the
// generated reference exact for each.
const ex_config_field kRedisFields[] = {
    field("id.key", EX_CFG_BOOL,
          "the id is the record key (set exactly one of id.key, id.header, id.json)", "false"),
    field("id.header", EX_CFG_STRING, "the id is the value of this record header"),
    field("id.json", EX_CFG_STRING,
          "the id is at this JSON pointer in the value, e.g. /messageId (string or number)"),
    field("id.max.bytes", EX_CFG_INT,
          "longer ids are record errors; canonical UUID text is stored as 16 bytes, ids over "
          "17 bytes as a 128-bit hash",
          "128"),
    required("shards", EX_CFG_LIST,
             "Redis servers (host:port) holding the claims; an id's server is a jump "
             "consistent hash of the id over this list, so every host agrees"),
    field("shards.previous", EX_CFG_LIST,
          "the shard list before shards.cutover: consulted until every claim made in it "
          "has expired (cutover + grace + retention.max.age + bucket.span), then retired"),
    field("shards.cutover", EX_CFG_STRING,
          "when `shards` takes over from shards.previous: a UTC time "
          "(2026-11-23T12:30:00Z) or unix ms, the same on every host and later than the "
          "reload reaches them all (a new reshard needs a new cutover: one left from the "
          "last reshard has retired shards.previous already, and a WARNING says so)"),
    field("shards.cutover.grace", EX_CFG_DURATION,
          "after the cutover, ids are still claimed in the previous layout first for this "
          "long: the largest clock difference between hosts",
          "60000"),
    required("retention.max.age", EX_CFG_DURATION,
             "the window: an id is remembered at least this long (at most one bucket.span "
             "longer), e.g. 24h"),
    field("bucket.span", EX_CFG_DURATION,
          "claims of one span of time share buckets that expire together, a span after "
          "the window; a lookup reads retention.max.age / bucket.span + 1 slots (one Redis "
          "call each). Default: the window (2 slots; claims live 1-2 windows). While "
          "claims made with another value live, the store refuses this one: a config "
          "error, the pipeline stops (the plugin's README says how to change it)"),
    field("bucket.slices", EX_CFG_INT,
          "hashes per span and shard; aim for 100-500 ids per hash (ids per span / shards "
          "/ this) and keep it under the server's hash-max-listpack-entries. Choose it "
          "before the first claim: while claims made with another value live, the store "
          "refuses this one (a config error, the pipeline stops)",
          "1024"),
    field("key.prefix", EX_CFG_STRING,
          "prefix of the bucket keys; default exactly:<pipeline>:<stage>: (hosts of one "
          "pipeline share it; changing it loses the claims made under the old one)"),
    field("fingerprint.bytes", EX_CFG_INT,
          "bytes of the value hash kept per id to tell duplicates from conflicts: 4, 8, or "
          "0 (no conflict detection)",
          "4"),
    field("on.conflict", EX_CFG_STRING,
          "same id, different content: duplicate = drop and count, reject = record error, "
          "stop = fail the pipeline",
          "duplicate", kConflict),
    field("durability", EX_CFG_STRING,
          "what a commit waits for: none (Redis's own persistence; a Redis crash can forget "
          "committed claims), aof-always (require appendonly yes + appendfsync always on "
          "every shard: each answer is on disk), replicas (WAIT for durability.replicas "
          "replicas per shard before the commit)",
          "none", kDurability),
    field("durability.replicas", EX_CFG_INT, "replicas that must hold the claims (durability: replicas)",
          "1"),
    field("durability.timeout", EX_CFG_DURATION,
          "longest WAIT for replicas; fewer in time -> the round is retried", "5000"),
    field("redis.timeout", EX_CFG_DURATION,
          "connect and command timeout; a timeout is a retriable error (the round is "
          "replayed)",
          "5000"),
    field("password", EX_CFG_STRING,
          "AUTH with it on connect (a server with requirepass, or an ACL user's); the same "
          "on every shard. A refused or missing password stops the pipeline naming this key. "
          "Use ${ENV_VAR} to keep it out of the file; the host masks it in its logs"),
    field("username", EX_CFG_STRING, "ACL user for AUTH (needs password); empty = the default user"),
    field("tls", EX_CFG_BOOL,
          "TLS to every shard (a server's tls-port; managed Redis with in-transit "
          "encryption). The server's certificate must chain to tls.ca.file and name the "
          "shard's host (an IP address as an IP SAN) or tls.server.name; an untrusted one "
          "stops the pipeline naming the key",
          "false"),
    field("tls.ca.file", EX_CFG_STRING,
          "PEM file of the CA(s) that signed the servers' certificates; empty = the "
          "system's CAs"),
    field("tls.cert.file", EX_CFG_STRING,
          "PEM client certificate, for servers that check clients (tls-auth-clients yes); "
          "with tls.key.file"),
    field("tls.key.file", EX_CFG_STRING, "PEM private key of tls.cert.file, unencrypted"),
    field("tls.server.name", EX_CFG_STRING,
          "the name the servers' certificates must carry (also sent as SNI), when it is not "
          "the host in shards (e.g. shards listed by address behind one TLS name)"),
};

}  // namespace

EXACTLY_PLUGIN("dedupe", "0.1.0",
               exactly::sdk::transform<exactly::dedupe::DedupeTransform>(
                   "dedupe",
                   "Drops records whose id was already seen in the same input partition; "
                   "owner-aware (a replay of the first record is emitted again), RocksDB "
                   "state per partition",
                   kFields),
               exactly::sdk::transform<exactly::dedupe::RedisDedupeTransform>(
                   "dedupe-redis",
                   "Drops records whose id was already seen by any host of the pipeline, in a "
                   "time window; owner-aware like dedupe, claims kept in sharded Redis "
                   "(hash buckets by time, one Lua call per batch and shard)",
                   kRedisFields))
