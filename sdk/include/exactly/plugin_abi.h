/*
 * exactly plugin ABI — the only contract between the host and a plugin library.
 *
 * Pure C. Nothing C++ crosses this boundary: no exceptions, no std:: types, no
 * RTTI. Every struct that can grow starts with `struct_size` so either side can tell
 * which fields the other one knows. Policy (what may change without a version bump)
 * is in docs/abi-policy.md; tests/docs/abi_header.sha256 pins this file so it cannot
 * change silently.
 *
 * Arrays of versioned structs (components, config fields) are walked with the
 * element's own struct_size, so they may grow too. Partition and record arrays are
 * fixed within a major version.
 *
 * Naming: `ex_*_vtable` members are implemented by the plugin and called by the host;
 * `ex_host_api` members are implemented by the host and called by the plugin.
 * Pointers named `borrowed` are valid only for the duration of the call.
 */
#ifndef EXACTLY_PLUGIN_ABI_H
#define EXACTLY_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Major: incompatible change. Minor: append-only growth of structs. The host refuses a
 * plugin whose major differs or whose minor is newer than its own. */
#define EX_ABI_VERSION_MAJOR 1u
#define EX_ABI_VERSION_MINOR 4u
#define EX_ABI_VERSION ((EX_ABI_VERSION_MAJOR << 16) | EX_ABI_VERSION_MINOR)

/* The one symbol a plugin library exports. */
#define EX_PLUGIN_ENTRY_SYMBOL "exactly_plugin_descriptor"

#if defined(_WIN32)
#define EX_EXPORT __declspec(dllexport)
#else
#define EX_EXPORT __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------- basic types */

/* A byte view. ptr == NULL means "absent" (e.g. a null Kafka key), distinct from an
 * empty value (ptr != NULL, len == 0). */
typedef struct ex_bytes {
  const uint8_t* ptr;
  size_t len;
} ex_bytes;

/* Status codes. The class decides what the engine does next. */
typedef enum ex_status {
  EX_OK = 0,
  /* Transient trouble (broker away, timeout): abort the round, rewind, retry. */
  EX_ERR_RETRIABLE = 1,
  /* The round cannot complete (e.g. a transaction must abort): abort + rewind. */
  EX_ERR_ABORTABLE = 2,
  /* The instance is unusable (fenced producer, corrupt state): tear the pipeline
   * instance down and rebuild it with backoff. */
  EX_ERR_FATAL = 3,
  /* Configuration is invalid: never retried. `ex_error.key` names the key. */
  EX_ERR_CONFIG = 4,
  /* Operation not supported by this component (e.g. reconfigure in place). */
  EX_ERR_UNSUPPORTED = 5
} ex_status;

/* Caller-allocated error details (librdkafka style: no allocation across the ABI). */
#define EX_ERROR_KEY_MAX 128
#define EX_ERROR_MESSAGE_MAX 1024
typedef struct ex_error {
  uint32_t struct_size;
  int32_t code;                         /* ex_status */
  char key[EX_ERROR_KEY_MAX];           /* config key the error is about, or "" */
  char message[EX_ERROR_MESSAGE_MAX];   /* NUL-terminated, human readable */
} ex_error;

/* ---------------------------------------------------------------- records */

typedef struct ex_header {
  ex_bytes key;
  ex_bytes value;
} ex_header;

/* A record is a view. `partition` is the pipeline-local id of the input partition it
 * came from (see ex_partition); `offset` is its position within that partition. The
 * pair is the record's origin: dedupe owners, error messages and DLQ headers use it.
 * Layout is fixed for a major version; batches carry record_size as stride anyway. */
typedef struct ex_record {
  ex_bytes key;
  ex_bytes value;
  const ex_header* headers;
  uint32_t header_count;
  int32_t partition;
  int64_t offset;
  int64_t timestamp_ms; /* -1 when unknown */
} ex_record;

typedef struct ex_batch {
  uint32_t struct_size;
  uint32_t record_size; /* sizeof(ex_record) of the producer of this batch */
  const ex_record* records;
  size_t count;
} ex_batch;

/* An input partition. Sources define them; the host forwards assignment to every
 * transform and the sink. `name` is stable across restarts (stateful stages key their
 * stores by it); `number` is the source-native number (Kafka partition);
 * `start_offset` is the committed position the source resumes from (-1 = unknown). */
typedef struct ex_partition {
  uint32_t struct_size;
  int32_t id;
  ex_bytes name;
  ex_bytes topic; /* source-native group of partitions (Kafka topic), may be empty */
  int32_t number;
  int64_t start_offset;
} ex_partition;

/* start_offset of a revoked partition the source no longer owned (1.1). */
#define EX_PARTITION_LOST (-2)

/* Source positions as the source encodes them. `format` tells a sink that stores
 * positions atomically with its output whether it understands them (e.g. "kafka.v1"). */
typedef struct ex_checkpoint {
  uint32_t struct_size;
  ex_bytes format;
  ex_bytes data;
} ex_checkpoint;

/* ---------------------------------------------------------------- configuration */

typedef enum ex_config_type {
  EX_CFG_STRING = 1,
  EX_CFG_INT = 2,      /* int64 */
  EX_CFG_DOUBLE = 3,
  EX_CFG_BOOL = 4,
  EX_CFG_LIST = 5,     /* list of strings */
  EX_CFG_DURATION = 6, /* "250ms", "5s", "2m", "1h", "7d" or an int of milliseconds */
  EX_CFG_SIZE = 7,     /* "64MiB", "1GB" or an int of bytes */
  EX_CFG_MAP = 8       /* free-form string->string map under this key (pass-through) */
} ex_config_type;

/* One declared key. Nested YAML maps are addressed by dotted keys: the key
 * "retention.max.keys" matches `retention: { max.keys: 5 }` and `retention.max.keys: 5`. */
typedef struct ex_config_field {
  uint32_t struct_size;
  const char* key;
  int32_t type;             /* ex_config_type */
  int32_t required;         /* non-zero: must be given */
  const char* default_value;/* canonical text, NULL if none */
  const char* doc;          /* one line for `exactly plugins` and the reference */
  const char* const* allowed; /* NULL-terminated list of allowed values, or NULL */
} ex_config_field;

/* The validated configuration handed to create(): every declared key with its value
 * (defaults filled in) as canonical text. Durations are in milliseconds, sizes in bytes,
 * bools "true"/"false". A list key appears once per element, in order; a map key
 * appears as "<key>.<subkey>" once per entry. */
typedef struct ex_config_entry {
  ex_bytes key;
  ex_bytes value;
} ex_config_entry;

typedef struct ex_config {
  uint32_t struct_size;
  const ex_config_entry* entries;
  size_t count;
} ex_config;

/* ---------------------------------------------------------------- state changelogs (1.1) */

/* A stateful transform may keep a changelog of its state in the sink's system, written
 * inside the round's commit (for Kafka: in the same transaction as the output and the
 * source offsets), so that another host can rebuild the state of a partition that moved.
 * A changelog is named by `store` (the kafka sink: a topic) and has one partition per
 * input partition. Positions are the sink system's offsets. */
typedef struct ex_state_info {
  uint32_t struct_size;
  int64_t start;   /* first readable position (records before it are gone) */
  int64_t end;     /* committed end: a reader that got here has every committed record */
  int32_t created; /* non-zero: the changelog did not exist and was created by this call */
} ex_state_info;

/* Receives one changelog record; value.ptr == NULL is a tombstone. Return non-zero to
 * stop reading (the read then fails with EX_ERR_FATAL). */
typedef int32_t (*ex_state_record_fn)(void* ctx, int64_t position, ex_bytes key,
                                      ex_bytes value);

/* ---------------------------------------------------------------- host services */

typedef enum ex_log_level {
  EX_LOG_DEBUG = 0,
  EX_LOG_INFO = 1,
  EX_LOG_WARN = 2,
  EX_LOG_ERROR = 3
} ex_log_level;

typedef enum ex_metric_kind {
  EX_METRIC_COUNTER = 1, /* value is added */
  EX_METRIC_GAUGE = 2    /* value replaces */
} ex_metric_kind;

typedef struct ex_host_api {
  uint32_t struct_size;
  void* ctx;
  const char* pipeline_name; /* NUL-terminated, lives as long as the instance */
  const char* component_id;  /* e.g. "transforms[0]/dedupe" */
  void (*log)(void* ctx, int32_t level, const char* msg, size_t len);
  /* name: Prometheus metric name without the "exactly_" prefix (e.g.
   * "dedupe_duplicates_total"); labels: "k=v,k=v" or empty. The host adds the
   * `pipeline` and `stage` labels. Thread-safe. */
  void (*metric)(void* ctx, int32_t kind, const char* name, const char* labels,
                 double value);
  /* Sources call these from inside poll() when their partition set changes. The host
   * commits the running round before a revocation returns, then tells every stage.
   * In a revocation, start_offset is the partition's position, or EX_PARTITION_LOST
   * (1.1) when the source lost it (e.g. its group session expired): another member may
   * own it already, so the host aborts the running round instead of committing it. */
  int32_t (*partitions_assigned)(void* ctx, const ex_partition* parts, size_t n,
                                 ex_error* err);
  int32_t (*partitions_revoked)(void* ctx, const ex_partition* parts, size_t n,
                                ex_error* err);
  /* ---- 1.1: state changelogs, forwarded to the sink (check struct_size first). ----
   * state_supported: non-zero when the pipeline's sink implements the state calls.
   * state_open: find (or create) the changelog partition of `part`, fill `info`;
   *   EX_ERR_UNSUPPORTED when this sink instance cannot keep changelogs (config).
   * state_read: read committed records from `from` up to the committed end.
   * state_write: append a record in the running round; call from prepare_commit.
   *   A NULL value.ptr writes a tombstone.
   * state_position: after commit, the position just after the last record of `part`
   *   this instance committed, or -1 if it committed none. */
  int32_t (*state_supported)(void* ctx);
  int32_t (*state_open)(void* ctx, ex_bytes store, const ex_partition* part,
                        ex_state_info* info, ex_error* err);
  int32_t (*state_read)(void* ctx, ex_bytes store, const ex_partition* part, int64_t from,
                        ex_state_record_fn fn, void* fn_ctx, ex_error* err);
  int32_t (*state_write)(void* ctx, ex_bytes store, const ex_partition* part, ex_bytes key,
                         ex_bytes value, ex_error* err);
  int64_t (*state_position)(void* ctx, ex_bytes store, const ex_partition* part);
  /* ---- 1.2: standby replicas (check struct_size first). ----
   * Sources call this from inside poll() with every partition this instance should keep
   * a warm copy of without owning it (e.g. the ones its group would give it if another
   * member left); it replaces the previous set. The host hands the set to the stages
   * (ex_transform_vtable.standby), leaving out partitions assigned here. */
  int32_t (*standby)(void* ctx, const ex_partition* parts, size_t n, ex_error* err);
  /* 1.2: a stage holds back a partition it cannot take records of yet (its state is
   * still being restored, say), so that only that partition waits: call `hold` from
   * inside assign(); the host pauses the partition at the source, from the assignment's
   * start_offset, and the other partitions keep flowing. EX_ERR_UNSUPPORTED when the
   * source cannot pause single partitions: then finish the work before assign()
   * returns. `release` may be called from any thread once the stage is ready; the host
   * resumes the partition between rounds. A revocation ends a hold too. */
  int32_t (*hold)(void* ctx, const ex_partition* part, ex_error* err);
  void (*release)(void* ctx, const ex_partition* part);
} ex_host_api;

/* ---------------------------------------------------------------- emitters */

/* Where a transform puts its output. Keeping an input record unchanged is a call
 * with its index (no copy); new or rewritten records are copied by the host. A record
 * error hands the input record to the pipeline's error policy (stop / skip /
 * dead-letter) with a reason. */
typedef struct ex_emitter {
  uint32_t struct_size;
  void* ctx;
  int32_t (*keep)(void* ctx, size_t input_index);
  int32_t (*emit)(void* ctx, const ex_record* borrowed);
  int32_t (*reject)(void* ctx, size_t input_index, const char* reason, size_t len);
} ex_emitter;

/* Where a sink reports per-record failures found synchronously (e.g. over the size
 * limit); the pipeline's error policy decides. */
typedef struct ex_record_errors {
  uint32_t struct_size;
  void* ctx;
  int32_t (*reject)(void* ctx, size_t input_index, const char* reason, size_t len);
  /* 1.4 (check struct_size): a record error for a record given by value, for a sink
   * that finds it after write() returned; only from inside ex_sink_vtable.completed. */
  int32_t (*reject_record)(void* ctx, const ex_record* borrowed, const char* reason, size_t len);
} ex_record_errors;

/* ---------------------------------------------------------------- components */

typedef enum ex_component_kind {
  EX_KIND_SOURCE = 1,
  EX_KIND_TRANSFORM = 2,
  EX_KIND_SINK = 3
} ex_component_kind;

/* Sources. The batch filled by poll() stays valid until the next poll/rewind/destroy. */
typedef struct ex_source_vtable {
  uint32_t struct_size;
  int32_t (*create)(const ex_host_api* host, const ex_config* config, void** out_self,
                    ex_error* err);
  void (*destroy)(void* self);
  /* Start reading. `resume` is the position a sink stored with its output, or NULL:
   * then the source resumes from its own committed positions. */
  int32_t (*open)(void* self, const ex_checkpoint* resume, ex_error* err);
  /* Fills `out` (count may be 0). Returns EX_OK, or an error class. `*end_of_input` is
   * set non-zero when a bounded source has nothing more, ever. */
  int32_t (*poll)(void* self, int32_t timeout_ms, ex_batch* out, int32_t* end_of_input,
                  ex_error* err);
  /* The positions just after the last record returned by poll. Valid until next call. */
  int32_t (*checkpoint)(void* self, ex_checkpoint* out, ex_error* err);
  /* Make positions durable in the source's own store (at_least_once, or when the sink
   * does not store positions). */
  int32_t (*commit)(void* self, const ex_checkpoint* positions, ex_error* err);
  /* Go back to `positions` (the last committed ones) after an aborted round. */
  int32_t (*rewind)(void* self, const ex_checkpoint* positions, ex_error* err);
  /* Backpressure; may be NULL. */
  int32_t (*pause)(void* self, int32_t paused, ex_error* err);
  /* Apply a new config in place; NULL or EX_ERR_UNSUPPORTED means "restart me". */
  int32_t (*reconfigure)(void* self, const ex_config* config, ex_error* err);
  /* 1.2, may be NULL. paused != 0: return no records of `parts` from the next poll on
   * (records of them fetched but not handed out are dropped) and report their position
   * as their start_offset (-1: none committed yet). paused == 0: continue them from
   * start_offset. Records of them already returned by the last poll stay valid. The
   * host calls it with n == 0 (from inside poll) to ask whether single partitions can be
   * paused: EX_OK or EX_ERR_UNSUPPORTED. */
  int32_t (*pause_partitions)(void* self, const ex_partition* parts, size_t n, int32_t paused,
                              ex_error* err);
  /* 1.3, may be NULL. Checks a configuration the way create() would, without creating
   * anything: no connections, files, directories or threads, no state kept. EX_OK, or
   * EX_ERR_CONFIG with `err->key` naming the key. The host calls it for every component
   * of a config it loads (`exactly validate`, start, reload) before any create(). */
  int32_t (*validate)(const ex_config* config, ex_error* err);
  /* 1.4, may be NULL: what checkpoint() would report, but with each partition of `parts`
   * at its start_offset (never ahead of checkpoint()); other partitions as checkpoint().
   * Valid until the next call. Lets the host commit a sink's completion cursor. */
  int32_t (*checkpoint_at)(void* self, const ex_partition* parts, size_t n, ex_checkpoint* out,
                           ex_error* err);
} ex_source_vtable;

typedef struct ex_transform_vtable {
  uint32_t struct_size;
  int32_t (*create)(const ex_host_api* host, const ex_config* config, void** out_self,
                    ex_error* err);
  void (*destroy)(void* self);
  int32_t (*assign)(void* self, const ex_partition* parts, size_t n, ex_error* err);
  int32_t (*revoke)(void* self, const ex_partition* parts, size_t n, ex_error* err);
  int32_t (*process)(void* self, const ex_batch* in, const ex_emitter* out,
                     ex_error* err);
  /* Make this round's state durable (dedupe: WriteBatch written, WAL synced). */
  int32_t (*prepare_commit)(void* self, ex_error* err);
  /* The sink committed; the round is final. */
  int32_t (*commit)(void* self, ex_error* err);
  /* The round was abandoned; the source will replay from the last commit. */
  int32_t (*abort)(void* self, ex_error* err);
  int32_t (*reconfigure)(void* self, const ex_config* config, ex_error* err);
  /* 1.1, may be NULL. Called before prepare_commit with every partition that gave
   * records this round; start_offset is the source position just after the last record
   * read from it (records dropped upstream of this stage included). */
  int32_t (*positions)(void* self, const ex_partition* parts, size_t n, ex_error* err);
  /* 1.2, may be NULL. The partitions to keep warm copies of (never ones assigned to this
   * instance; start_offset is -1). Called between rounds on the pipeline thread when the
   * set changes and at least once a second (also with an empty set), so that a stage can
   * bring its copies up to date a slice at a time, or notice its own background work:
   * each call delays the round, keep it short.
   * An error is logged and the pipeline goes on (a standby only saves restore time). A
   * partition later assigned here arrives through assign() as usual. */
  int32_t (*standby)(void* self, const ex_partition* parts, size_t n, ex_error* err);
  /* 1.3, may be NULL: as ex_source_vtable.validate. */
  int32_t (*validate)(const ex_config* config, ex_error* err);
} ex_transform_vtable;

/* Flags a sink reports from commit(). */
#define EX_SINK_STORED_POSITIONS 1u /* positions are now durable with the output */
/* 1.1, with STORED_POSITIONS: they were stored where the source keeps its own (the
 * kafka sink's transaction writes the group's offsets). Without it, the host also
 * hands them to the source's commit(), so that the source's own store (e.g. a consumer
 * group that other hosts resume from) follows the sink's. */
#define EX_SINK_POSITIONS_IN_SOURCE 2u

typedef struct ex_sink_vtable {
  uint32_t struct_size;
  int32_t (*create)(const ex_host_api* host, const ex_config* config, void** out_self,
                    ex_error* err);
  void (*destroy)(void* self);
  /* Recover after a crash. A sink that stores source positions with its output fills
   * `stored` (valid until the next call) and sets `*has_stored`; the host resumes the
   * source from there. */
  int32_t (*open)(void* self, ex_checkpoint* stored, int32_t* has_stored, ex_error* err);
  int32_t (*assign)(void* self, const ex_partition* parts, size_t n, ex_error* err);
  int32_t (*revoke)(void* self, const ex_partition* parts, size_t n, ex_error* err);
  int32_t (*write)(void* self, const ex_batch* in, const ex_record_errors* errors,
                   ex_error* err);
  /* Everything written this round is durable or will be by commit (flush). */
  int32_t (*prepare_commit)(void* self, ex_error* err);
  /* Make the round's output visible, atomically with `positions` when the sink can
   * (sets EX_SINK_STORED_POSITIONS in *flags). `positions` may be NULL. */
  int32_t (*commit)(void* self, const ex_checkpoint* positions, uint32_t* flags,
                    ex_error* err);
  int32_t (*abort)(void* self, ex_error* err);
  int32_t (*reconfigure)(void* self, const ex_config* config, ex_error* err);
  /* 1.1, all NULL or all set: the state changelog calls of ex_host_api, served by the
   * sink (same arguments, same rules). */
  int32_t (*state_open)(void* self, ex_bytes store, const ex_partition* part,
                        ex_state_info* info, ex_error* err);
  int32_t (*state_read)(void* self, ex_bytes store, const ex_partition* part, int64_t from,
                        ex_state_record_fn fn, void* fn_ctx, ex_error* err);
  int32_t (*state_write)(void* self, ex_bytes store, const ex_partition* part, ex_bytes key,
                         ex_bytes value, ex_error* err);
  int64_t (*state_position)(void* self, ex_bytes store, const ex_partition* part);
  /* 1.3, may be NULL: as ex_source_vtable.validate. */
  int32_t (*validate)(const ex_config* config, ex_error* err);
  /* 1.4, may be NULL: an ordered completion window. Records may still be in flight after
   * write() returns. Before committing a round the host calls this with every partition
   * the sink may hold records of, start_offset = the scan position (just after the last
   * record read); the sink lowers each to the offset of its lowest incomplete record and
   * reports records that failed for good since the last call through
   * errors->reject_record (the host writes their dead letters in this round). The host
   * commits the lowered positions (through the source's checkpoint_at). At the end of a
   * bounded input, or when the source has no checkpoint_at, the host calls again, a few
   * ms apart, until no partition is behind. abort(), revoke() (of its partitions) and
   * destroy() after a stop drop what is in flight: the source replays it from the
   * committed positions. */
  int32_t (*completed)(void* self, ex_partition* parts, size_t n, const ex_record_errors* errors,
                       ex_error* err);
} ex_sink_vtable;

typedef struct ex_component {
  uint32_t struct_size;
  int32_t kind; /* ex_component_kind */
  const char* name; /* unique per kind across all loaded plugins, e.g. "kafka" */
  const char* doc;
  const ex_config_field* fields;
  size_t field_count;
  const void* vtable; /* ex_source_vtable / ex_transform_vtable / ex_sink_vtable */
} ex_component;

typedef struct ex_plugin_descriptor {
  uint32_t struct_size;
  uint32_t abi_version; /* EX_ABI_VERSION the plugin was built against */
  const char* name;     /* library name, e.g. "kafka" */
  const char* version;  /* plugin's own version text */
  const ex_component* components;
  size_t component_count;
} ex_plugin_descriptor;

/* The exported entry point. `host_abi_version` lets a plugin refuse an older host.
 * Returns NULL to refuse. The descriptor must stay valid while the library is loaded. */
typedef const ex_plugin_descriptor* (*ex_plugin_entry_fn)(uint32_t host_abi_version);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EXACTLY_PLUGIN_ABI_H */
