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
 *
 * Memory (1.4 states it everywhere with a LIFETIME line): nothing is ever freed by the
 * side that did not allocate it, and every pointer one side hands the other is valid
 * only for the duration of that call unless its LIFETIME line says longer. Whoever
 * wants to keep something beyond that copies it.
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
#define EX_ABI_VERSION_MINOR 6u
#define EX_ABI_VERSION ((EX_ABI_VERSION_MAJOR << 16) | EX_ABI_VERSION_MINOR)

/* The one symbol a plugin library exports. */
#define EX_PLUGIN_ENTRY_SYMBOL "exactly_plugin_descriptor"

#if defined(_WIN32)
#define EX_EXPORT __declspec(dllexport)
#else
#define EX_EXPORT __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------- handles (1.4) */

/* Opaque handles: the object behind one is owned by one side and only that side looks
 * inside; the other side only passes it back. Pointer-sized; until 1.3 they were all
 * `void*`, so binaries of every minor interoperate.
 *   Host objects, passed back to the host's functions next to them, never freed by the
 *   plugin: ex_host_ctx (ex_host_api.ctx), ex_emitter_ctx, ex_record_errors_ctx.
 *   Plugin objects, made by create(), passed back to that component's vtable calls,
 *   freed only by its destroy(): ex_source_self, ex_transform_self, ex_sink_self.
 *   ex_state_read_ctx: the object of the stage that called state_read; the host and the
 *   sink pass it unchanged to that stage's ex_state_record_fn.
 * C code written for 1.3 or older declares these as void*: it builds unchanged when it
 * defines EX_ABI_VOID_HANDLES before including this header. */
#ifdef EX_ABI_VOID_HANDLES
typedef void* ex_host_ctx;
typedef void* ex_emitter_ctx;
typedef void* ex_record_errors_ctx;
typedef void* ex_state_read_ctx;
typedef void* ex_source_self;
typedef void* ex_transform_self;
typedef void* ex_sink_self;
#else
typedef struct ex_host_ctx_s* ex_host_ctx;
typedef struct ex_emitter_ctx_s* ex_emitter_ctx;
typedef struct ex_record_errors_ctx_s* ex_record_errors_ctx;
typedef struct ex_state_read_ctx_s* ex_state_read_ctx;
typedef struct ex_source_self_s* ex_source_self;
typedef struct ex_transform_self_s* ex_transform_self;
typedef struct ex_sink_self_s* ex_sink_self;
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

/* Caller-allocated error details (librdkafka style: no allocation across the ABI).
 * LIFETIME: the caller's (the host zeroes one before each call it makes); the callee
 * writes it during the call only, `key` and `message` NUL-terminated within their arrays
 * (the host reads no further than the arrays anyway). */
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
 * Layout is fixed for a major version; batches carry record_size as stride anyway.
 * LIFETIME: the bytes behind key, value and headers belong to the batch's producer and
 * live as long as the batch does (see the call that hands the batch over). */
typedef struct ex_record {
  ex_bytes key;
  ex_bytes value;
  const ex_header* headers;
  uint32_t header_count;
  int32_t partition;
  int64_t offset;
  int64_t timestamp_ms; /* -1 when unknown */
} ex_record;

/* LIFETIME: a batch handed to process()/write() (struct, records and their bytes) is
 * valid for that call only; a batch filled by poll() is described there. */
typedef struct ex_batch {
  uint32_t struct_size;
  uint32_t record_size; /* sizeof(ex_record) of the producer of this batch */
  const ex_record* records;
  size_t count;
} ex_batch;

/* An input partition. Sources define them; the host forwards assignment to every
 * transform and the sink. `name` is stable across restarts (stateful stages key their
 * stores by it); `number` is the source-native number (Kafka partition);
 * `start_offset` is the committed position the source resumes from (-1 = unknown).
 * LIFETIME: arrays of partitions, and the name/topic bytes inside them, are the caller's
 * and valid for the call only, in both directions; the callee copies what it keeps. */
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
 * positions atomically with its output whether it understands them (e.g. "kafka.v1").
 * LIFETIME: a checkpoint passed in (open, commit, rewind) is the caller's, valid for
 * the call; one filled as an out parameter is described at its call. */
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

/* Flags of a declared key (ex_config_field.flags, ABI 1.6). */
/* The value is the path of a file that one component of this plugin and kind holds
 * alone (a file it writes, its offsets file): two such components in one host whose
 * values name the same file (compared as absolute, normalised paths; an empty value
 * names none) are refused when the config loads, naming both, instead of the second
 * failing at open. */
#define EX_CFG_EXCLUSIVE_PATH 1u

/* One declared key. Nested YAML maps are addressed by dotted keys: the key
 * "retention.max.keys" matches `retention: { max.keys: 5 }` and `retention.max.keys: 5`.
 * LIFETIME: the plugin's, static: valid as long as the library is loaded. */
typedef struct ex_config_field {
  uint32_t struct_size;
  const char* key;
  int32_t type;             /* ex_config_type */
  int32_t required;         /* non-zero: must be given */
  const char* default_value;/* canonical text, NULL if none */
  const char* doc;          /* one line for `exactly plugins` and the reference */
  const char* const* allowed; /* NULL-terminated list of allowed values, or NULL */
  /* ABI 1.6: EX_CFG_* flags. A field of a plugin built for 1.5 or older ends before
   * it (its struct_size): read as 0. */
  uint32_t flags;
} ex_config_field;

/* The validated configuration handed to create(): every declared key with its value
 * (defaults filled in) as canonical text. Durations are in milliseconds, sizes in bytes,
 * bools "true"/"false". A list key appears once per element, in order; a map key
 * appears as "<key>.<subkey>" once per entry.
 * LIFETIME: the config, its entries and their bytes are the host's and valid only during
 * the create(), reconfigure() or validate() call they are passed to: copy what you keep. */
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
 * stop reading (the read then fails with EX_ERR_FATAL).
 * LIFETIME: key and value bytes are the sink's, valid during this callback only. */
typedef int32_t (*ex_state_record_fn)(ex_state_read_ctx ctx, int64_t position, ex_bytes key,
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

/* LIFETIME: the host's. The struct, ctx, pipeline_name and component_id stay valid from
 * create() until destroy() returns (a plugin may keep the pointer); never after. */
typedef struct ex_host_api {
  uint32_t struct_size;
  ex_host_ctx ctx;
  const char* pipeline_name; /* NUL-terminated, lives as long as the instance */
  const char* component_id;  /* e.g. "transforms[0]/dedupe" */
  /* LIFETIME: msg is the plugin's, read during the call only. */
  void (*log)(ex_host_ctx ctx, int32_t level, const char* msg, size_t len);
  /* name: Prometheus metric name without the "exactly_" prefix (e.g.
   * "dedupe_duplicates_total"); labels: "k=v,k=v" or empty. The host adds the
   * `pipeline` and `stage` labels. Thread-safe.
   * LIFETIME: name and labels are the plugin's, read during the call only. */
  void (*metric)(ex_host_ctx ctx, int32_t kind, const char* name, const char* labels,
                 double value);
  /* Sources call these from inside poll() when their partition set changes. The host
   * commits the running round before a revocation returns, then tells every stage.
   * In a revocation, start_offset is the partition's position, or EX_PARTITION_LOST
   * (1.1) when the source lost it (e.g. its group session expired): another member may
   * own it already, so the host aborts the running round instead of committing it.
   * LIFETIME: `parts` and the names and topics in it are the source's, read during the
   * call only: the host copies what it keeps, and the arrays it passes on to the stages'
   * assign()/revoke() are valid for those calls only. */
  int32_t (*partitions_assigned)(ex_host_ctx ctx, const ex_partition* parts, size_t n,
                                 ex_error* err);
  int32_t (*partitions_revoked)(ex_host_ctx ctx, const ex_partition* parts, size_t n,
                                ex_error* err);
  /* ---- 1.1: state changelogs, forwarded to the sink (check struct_size first). ----
   * state_supported: non-zero when the pipeline's sink implements the state calls.
   * state_open: find (or create) the changelog partition of `part`, fill `info`;
   *   EX_ERR_UNSUPPORTED when this sink instance cannot keep changelogs (config).
   * state_read: read committed records from `from` up to the committed end.
   * state_write: append a record in the running round; call from prepare_commit.
   *   A NULL value.ptr writes a tombstone.
   * state_position: after commit, the position just after the last record of `part`
   *   this instance committed, or -1 if it committed none.
   * LIFETIME: store, part, key and value are the stage's, read during the call only (the
   *   sink copies what it writes); `info` is the stage's, filled during the call; fn_ctx
   *   is the stage's and must live until state_read returns. */
  int32_t (*state_supported)(ex_host_ctx ctx);
  int32_t (*state_open)(ex_host_ctx ctx, ex_bytes store, const ex_partition* part,
                        ex_state_info* info, ex_error* err);
  int32_t (*state_read)(ex_host_ctx ctx, ex_bytes store, const ex_partition* part,
                        int64_t from, ex_state_record_fn fn, ex_state_read_ctx fn_ctx,
                        ex_error* err);
  int32_t (*state_write)(ex_host_ctx ctx, ex_bytes store, const ex_partition* part,
                         ex_bytes key, ex_bytes value, ex_error* err);
  int64_t (*state_position)(ex_host_ctx ctx, ex_bytes store, const ex_partition* part);
  /* ---- 1.2: standby replicas (check struct_size first). ----
   * Sources call this from inside poll() with every partition this instance should keep
   * a warm copy of without owning it (e.g. the ones its group would give it if another
   * member left); it replaces the previous set. The host hands the set to the stages
   * (ex_transform_vtable.standby), leaving out partitions assigned here.
   * LIFETIME: `parts` and its names are the source's, read during the call only. */
  int32_t (*standby)(ex_host_ctx ctx, const ex_partition* parts, size_t n, ex_error* err);
  /* 1.2: a stage holds back a partition it cannot take records of yet (its state is
   * still being restored, say), so that only that partition waits: call `hold` from
   * inside assign(); the host pauses the partition at the source, from the assignment's
   * start_offset, and the other partitions keep flowing. EX_ERR_UNSUPPORTED when the
   * source cannot pause single partitions: then finish the work before assign()
   * returns. `release` may be called from any thread once the stage is ready; the host
   * resumes the partition between rounds. A revocation ends a hold too.
   * LIFETIME: `part` is the stage's, read during the call only (release reads its id). */
  int32_t (*hold)(ex_host_ctx ctx, const ex_partition* part, ex_error* err);
  void (*release)(ex_host_ctx ctx, const ex_partition* part);
  /* ---- 1.5 (check struct_size first). ----
   * 1 once the host has been asked to stop this instance (a stop signal, a reload that
   * removes or restarts its pipeline), else 0. A call that may wait long (open()
   * waiting for a cluster, a retry loop) polls it and gives up with any error: the
   * host, stopping, neither reports that error as a failure nor restarts the instance.
   * Any thread, any time while the instance lives. */
  int32_t (*stopping)(ex_host_ctx ctx);
} ex_host_api;

/* ---------------------------------------------------------------- emitters */

/* Where a transform puts its output. Keeping an input record unchanged is a call
 * with its index (no copy); new or rewritten records are copied by the host. A record
 * error hands the input record to the pipeline's error policy (stop / skip /
 * dead-letter) with a reason.
 * LIFETIME: the host's, valid during the process() call it is passed to; call it from
 * that call only (on its thread). `borrowed` (the record and all its bytes) and `reason`
 * are the plugin's and copied by the host before the call returns. */
typedef struct ex_emitter {
  uint32_t struct_size;
  ex_emitter_ctx ctx;
  int32_t (*keep)(ex_emitter_ctx ctx, size_t input_index);
  int32_t (*emit)(ex_emitter_ctx ctx, const ex_record* borrowed);
  int32_t (*reject)(ex_emitter_ctx ctx, size_t input_index, const char* reason, size_t len);
} ex_emitter;

/* Where a sink reports per-record failures found synchronously (e.g. over the size
 * limit); the pipeline's error policy decides.
 * LIFETIME: the host's, valid during the write() call it is passed to; `reason` is the
 * plugin's and copied by the host before reject returns. */
typedef struct ex_record_errors {
  uint32_t struct_size;
  ex_record_errors_ctx ctx;
  int32_t (*reject)(ex_record_errors_ctx ctx, size_t input_index, const char* reason,
                    size_t len);
  /* 1.4 (check struct_size): a record error for a record given by value, for a sink
   * that finds it after write() returned; only from inside ex_sink_vtable.completed.
   * LIFETIME: `borrowed` and `reason` are the sink's; the host copies both before it
   * returns. */
  int32_t (*reject_record)(ex_record_errors_ctx ctx, const ex_record* borrowed,
                           const char* reason, size_t len);
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
  /* LIFETIME: *out_self is the plugin's until destroy(); on an error the host ignores it
   * and never calls destroy(), so create() frees whatever it made. `host` lives until
   * destroy() returns; `config` only during the call. Same for every component kind. */
  int32_t (*create)(const ex_host_api* host, const ex_config* config,
                    ex_source_self* out_self, ex_error* err);
  void (*destroy)(ex_source_self self);
  /* Start reading. `resume` is the position a sink stored with its output, or NULL:
   * then the source resumes from its own committed positions. */
  int32_t (*open)(ex_source_self self, const ex_checkpoint* resume, ex_error* err);
  /* Fills `out` (count may be 0). Returns EX_OK, or an error class. `*end_of_input` is
   * set non-zero when a bounded source has nothing more, ever.
   * LIFETIME: `out` is the host's; the records array and every byte the records point to
   * are the source's and must stay valid until the next poll, rewind or destroy (the
   * host hands kept records to the sink without copying); pause_partitions keeps them. */
  int32_t (*poll)(ex_source_self self, int32_t timeout_ms, ex_batch* out,
                  int32_t* end_of_input, ex_error* err);
  /* The positions just after the last record returned by poll.
   * LIFETIME: `out` is the host's; the format and data bytes are the source's and must
   * stay valid until the next call on this source (the host copies them at once). */
  int32_t (*checkpoint)(ex_source_self self, ex_checkpoint* out, ex_error* err);
  /* Make positions durable in the source's own store (at_least_once, or when the sink
   * does not store positions). */
  int32_t (*commit)(ex_source_self self, const ex_checkpoint* positions, ex_error* err);
  /* Go back to `positions` (the last committed ones) after an aborted round. */
  int32_t (*rewind)(ex_source_self self, const ex_checkpoint* positions, ex_error* err);
  /* Backpressure; may be NULL. */
  int32_t (*pause)(ex_source_self self, int32_t paused, ex_error* err);
  /* Apply a new config in place; NULL or EX_ERR_UNSUPPORTED means "restart me". */
  int32_t (*reconfigure)(ex_source_self self, const ex_config* config, ex_error* err);
  /* 1.2, may be NULL. paused != 0: return no records of `parts` from the next poll on
   * (records of them fetched but not handed out are dropped) and report their position
   * as their start_offset (-1: none committed yet). paused == 0: continue them from
   * start_offset. Records of them already returned by the last poll stay valid. The
   * host calls it with n == 0 (from inside poll) to ask whether single partitions can be
   * paused: EX_OK or EX_ERR_UNSUPPORTED. */
  int32_t (*pause_partitions)(ex_source_self self, const ex_partition* parts, size_t n,
                              int32_t paused, ex_error* err);
  /* 1.3, may be NULL. Checks a configuration the way create() would, without creating
   * anything: no connections, files, directories or threads, no state kept. EX_OK, or
   * EX_ERR_CONFIG with `err->key` naming the key. The host calls it for every component
   * of a config it loads (`exactly validate`, start, reload) before any create(). */
  int32_t (*validate)(const ex_config* config, ex_error* err);
  /* 1.4, may be NULL: what checkpoint() would report, but with each partition of `parts`
   * at its start_offset (never ahead of checkpoint()); other partitions as checkpoint().
   * Lets the host commit a sink's completion cursor.
   * LIFETIME: `parts` is the host's, for this call; `out` as in checkpoint(): its bytes
   * are the source's until the next call on this source. */
  int32_t (*checkpoint_at)(ex_source_self self, const ex_partition* parts, size_t n,
                           ex_checkpoint* out, ex_error* err);
} ex_source_vtable;

typedef struct ex_transform_vtable {
  uint32_t struct_size;
  int32_t (*create)(const ex_host_api* host, const ex_config* config,
                    ex_transform_self* out_self, ex_error* err);
  void (*destroy)(ex_transform_self self);
  int32_t (*assign)(ex_transform_self self, const ex_partition* parts, size_t n,
                    ex_error* err);
  int32_t (*revoke)(ex_transform_self self, const ex_partition* parts, size_t n,
                    ex_error* err);
  /* LIFETIME: `in` (records and bytes) and `out` are the host's, for this call only. */
  int32_t (*process)(ex_transform_self self, const ex_batch* in, const ex_emitter* out,
                     ex_error* err);
  /* Make this round's state durable (dedupe: WriteBatch written, WAL synced). */
  int32_t (*prepare_commit)(ex_transform_self self, ex_error* err);
  /* The sink committed; the round is final. */
  int32_t (*commit)(ex_transform_self self, ex_error* err);
  /* The round was abandoned; the source will replay from the last commit. */
  int32_t (*abort)(ex_transform_self self, ex_error* err);
  int32_t (*reconfigure)(ex_transform_self self, const ex_config* config, ex_error* err);
  /* 1.1, may be NULL. Called before prepare_commit with every partition that gave
   * records this round; start_offset is the source position just after the last record
   * read from it (records dropped upstream of this stage included). */
  int32_t (*positions)(ex_transform_self self, const ex_partition* parts, size_t n,
                       ex_error* err);
  /* 1.2, may be NULL. The partitions to keep warm copies of (never ones assigned to this
   * instance; start_offset is -1). Called between rounds on the pipeline thread when the
   * set changes and at least once a second (also with an empty set), so that a stage can
   * bring its copies up to date a slice at a time, or notice its own background work:
   * each call delays the round, keep it short.
   * An error is logged and the pipeline goes on (a standby only saves restore time). A
   * partition later assigned here arrives through assign() as usual. */
  int32_t (*standby)(ex_transform_self self, const ex_partition* parts, size_t n,
                     ex_error* err);
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
  int32_t (*create)(const ex_host_api* host, const ex_config* config,
                    ex_sink_self* out_self, ex_error* err);
  void (*destroy)(ex_sink_self self);
  /* Recover after a crash. A sink that stores source positions with its output fills
   * `stored` and sets `*has_stored`; the host resumes the source from there.
   * LIFETIME: `stored` is the host's; its format and data bytes are the sink's and must
   * stay valid until the next call on this sink (the host copies them at once). */
  int32_t (*open)(ex_sink_self self, ex_checkpoint* stored, int32_t* has_stored,
                  ex_error* err);
  int32_t (*assign)(ex_sink_self self, const ex_partition* parts, size_t n, ex_error* err);
  int32_t (*revoke)(ex_sink_self self, const ex_partition* parts, size_t n, ex_error* err);
  /* LIFETIME: `in` (records and all their bytes) and `errors` are the host's, valid for
   * this call only: a sink that sends records later (e.g. librdkafka) copies them. */
  int32_t (*write)(ex_sink_self self, const ex_batch* in, const ex_record_errors* errors,
                   ex_error* err);
  /* Everything written this round is durable or will be by commit (flush). */
  int32_t (*prepare_commit)(ex_sink_self self, ex_error* err);
  /* Make the round's output visible, atomically with `positions` when the sink can
   * (sets EX_SINK_STORED_POSITIONS in *flags). `positions` may be NULL.
   * LIFETIME: `positions` is the host's, valid for this call: store its bytes, do not
   * keep the pointer. */
  int32_t (*commit)(ex_sink_self self, const ex_checkpoint* positions, uint32_t* flags,
                    ex_error* err);
  int32_t (*abort)(ex_sink_self self, ex_error* err);
  int32_t (*reconfigure)(ex_sink_self self, const ex_config* config, ex_error* err);
  /* 1.1, all NULL or all set: the state changelog calls of ex_host_api, served by the
   * sink (same arguments, same rules, same LIFETIME). */
  int32_t (*state_open)(ex_sink_self self, ex_bytes store, const ex_partition* part,
                        ex_state_info* info, ex_error* err);
  int32_t (*state_read)(ex_sink_self self, ex_bytes store, const ex_partition* part,
                        int64_t from, ex_state_record_fn fn, ex_state_read_ctx fn_ctx,
                        ex_error* err);
  int32_t (*state_write)(ex_sink_self self, ex_bytes store, const ex_partition* part,
                         ex_bytes key, ex_bytes value, ex_error* err);
  int64_t (*state_position)(ex_sink_self self, ex_bytes store, const ex_partition* part);
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
   * committed positions.
   * LIFETIME: `parts` and `errors` are the host's, for this call only. */
  int32_t (*completed)(ex_sink_self self, ex_partition* parts, size_t n,
                       const ex_record_errors* errors, ex_error* err);
} ex_sink_vtable;

/* LIFETIME (components, their fields, vtables and the descriptor): the plugin's, valid
 * as long as the library is loaded. */
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
  /* 1.4: facts of the plugin's build, in this order (EX_PLUGIN_BUILD_FACTS fills them).
   * The host refuses a library whose facts differ from its own, naming the fact: such
   * a plugin (built for another platform, or against an edited header) would misread
   * every record. A descriptor built for 1.3 or older (shorter) loads without the check. */
  uint32_t pointer_size;      /* sizeof(void*) */
  uint32_t byte_order;        /* EX_BYTE_ORDER_MARK as the plugin's compiler stores it */
  uint32_t record_size;       /* sizeof(ex_record) */
  uint32_t batch_size;        /* sizeof(ex_batch) */
  uint32_t partition_size;    /* sizeof(ex_partition) */
  uint32_t header_size;       /* sizeof(ex_header) */
  uint32_t config_entry_size; /* sizeof(ex_config_entry) */
} ex_plugin_descriptor;

/* Read back as another number by a host of the other byte order. */
#define EX_BYTE_ORDER_MARK 0x01020304u
/* The 1.4 members of ex_plugin_descriptor, for an initializer after component_count. */
#define EX_PLUGIN_BUILD_FACTS                                                         \
  (uint32_t)sizeof(void*), EX_BYTE_ORDER_MARK, (uint32_t)sizeof(ex_record),          \
      (uint32_t)sizeof(ex_batch), (uint32_t)sizeof(ex_partition),                     \
      (uint32_t)sizeof(ex_header), (uint32_t)sizeof(ex_config_entry)

/* The exported entry point. `host_abi_version` lets a plugin refuse an older host.
 * Returns NULL to refuse. The descriptor must stay valid while the library is loaded. */
typedef const ex_plugin_descriptor* (*ex_plugin_entry_fn)(uint32_t host_abi_version);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EXACTLY_PLUGIN_ABI_H */
