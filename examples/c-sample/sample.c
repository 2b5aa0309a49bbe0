/*
 * sample: keeps a deterministic share of the records, chosen by a hash of each record's
 * key (or value). A complete exactly plugin in plain C99, written against the C ABI
 * (exactly/plugin_abi.h) alone: no C++ SDK, no dependencies.
 *
 * The choice is a pure function of the bytes hashed and `salt`, so a replay after an
 * abort or a crash makes the same choice (docs/plugin-authoring.md, rule 4), and every
 * copy of a duplicated record is kept or dropped together.
 */
#include <exactly/plugin_abi.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the schema */

static const char* const kBy[] = {"key", "value", NULL};
static const char* const kOnMissing[] = {"keep", "drop", "reject", NULL};

/* The host validates the YAML against this before create() is called: unknown keys,
 * types, `required` and `allowed` values. create() checks what a schema cannot say. */
static const ex_config_field kFields[] = {
    {sizeof(ex_config_field), "percent", EX_CFG_DOUBLE, 1, NULL,
     "share of records to keep, in percent: more than 0, at most 100", NULL},
    {sizeof(ex_config_field), "by", EX_CFG_STRING, 0, "key",
     "what is hashed to choose: the record key or the value", kBy},
    {sizeof(ex_config_field), "salt", EX_CFG_STRING, 0, "",
     "mixed into the hash: another salt keeps another sample", NULL},
    {sizeof(ex_config_field), "on.missing", EX_CFG_STRING, 0, "keep",
     "record without a key (by: key): keep, drop, or reject to the error policy",
     kOnMissing},
};

/* ---------------------------------------------------------------- settings */

enum { BY_KEY, BY_VALUE };
enum { MISSING_KEEP, MISSING_DROP, MISSING_REJECT };

typedef struct settings {
  double percent;
  uint64_t threshold; /* keep when hash < threshold; UINT64_MAX and keep_all: all */
  int keep_all;
  int by;
  int on_missing;
  char* salt;
  size_t salt_len;
} settings;

typedef struct sample {
  const ex_host_api* host; /* valid as long as the instance */
  settings s;
} sample;

/* Fills the caller's ex_error: the host prints `key` with its file:line:col. */
static int32_t fail(ex_error* err, int32_t code, const char* key, const char* fmt, ...) {
  if (err != NULL) {
    va_list ap;
    err->code = code;
    snprintf(err->key, sizeof(err->key), "%s", key != NULL ? key : "");
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
  }
  return code;
}

/* The first value of `key` (the config holds every declared key, defaults filled). */
static int find(const ex_config* config, const char* key, ex_bytes* out) {
  size_t klen = strlen(key);
  for (size_t i = 0; config != NULL && i < config->count; ++i) {
    const ex_config_entry* e = &config->entries[i];
    if (e->key.len == klen && memcmp(e->key.ptr, key, klen) == 0) {
      *out = e->value;
      return 1;
    }
  }
  return 0;
}

static int equals(ex_bytes b, const char* text) {
  size_t n = strlen(text);
  return b.ptr != NULL && b.len == n && memcmp(b.ptr, text, n) == 0;
}

static void settings_free(settings* s) {
  free(s->salt);
  s->salt = NULL;
}

static int32_t settings_parse(const ex_config* config, settings* s, ex_error* err) {
  ex_bytes v;
  char text[64];
  char* end = NULL;
  memset(s, 0, sizeof(*s));

  if (!find(config, "percent", &v) || v.len == 0)
    return fail(err, EX_ERR_CONFIG, "percent", "is required");
  if (v.len >= sizeof(text))
    return fail(err, EX_ERR_CONFIG, "percent", "not a number");
  memcpy(text, v.ptr, v.len);
  text[v.len] = '\0';
  errno = 0;
  s->percent = strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || isnan(s->percent))
    return fail(err, EX_ERR_CONFIG, "percent", "'%s' is not a number", text);
  if (!(s->percent > 0.0 && s->percent <= 100.0))
    return fail(err, EX_ERR_CONFIG, "percent",
                "must be more than 0 and at most 100, got %s", text);
  s->keep_all = s->percent >= 100.0;
  /* 2^64 * percent / 100, computed in long double to stay exact enough near 100. */
  s->threshold = s->keep_all ? UINT64_MAX
                             : (uint64_t)(18446744073709551616.0L * (long double)s->percent /
                                          100.0L);

  s->by = find(config, "by", &v) && equals(v, "value") ? BY_VALUE : BY_KEY;
  s->on_missing = MISSING_KEEP;
  if (find(config, "on.missing", &v)) {
    if (equals(v, "drop")) s->on_missing = MISSING_DROP;
    else if (equals(v, "reject")) s->on_missing = MISSING_REJECT;
  }
  if (!find(config, "salt", &v) || v.ptr == NULL) v.len = 0;
  s->salt = malloc(v.len + 1);
  if (s->salt == NULL) return fail(err, EX_ERR_FATAL, NULL, "out of memory");
  if (v.len > 0) memcpy(s->salt, v.ptr, v.len);
  s->salt[v.len] = '\0';
  s->salt_len = v.len;
  return EX_OK;
}

/* ---------------------------------------------------------------- the choice */

/* FNV-1a over salt and bytes, then a 64-bit finaliser so the low share is uniform. */
static uint64_t hash_bytes(const settings* s, const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < s->salt_len; ++i) h = (h ^ (uint8_t)s->salt[i]) * 1099511628211ull;
  h = (h ^ 0xff) * 1099511628211ull; /* separates salt "ab"+"c" from "a"+"bc" */
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

/* ---------------------------------------------------------------- the vtable */

static void log_text(const ex_host_api* host, int32_t level, const char* fmt, ...) {
  char msg[256];
  va_list ap;
  int n;
  if (host == NULL || host->log == NULL) return;
  va_start(ap, fmt);
  n = vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (n < 0) return;
  host->log(host->ctx, level, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

static int32_t sample_create(const ex_host_api* host, const ex_config* config,
                             ex_transform_self* out_self, ex_error* err) {
  sample* self = calloc(1, sizeof(*self));
  int32_t rc;
  if (self == NULL) return fail(err, EX_ERR_FATAL, NULL, "out of memory");
  rc = settings_parse(config, &self->s, err);
  if (rc != EX_OK) {
    settings_free(&self->s);
    free(self);
    return rc;
  }
  self->host = host;
  log_text(host, EX_LOG_INFO, "keeping %g%% of the records by %s", self->s.percent,
           self->s.by == BY_KEY ? "key" : "value");
  *out_self = (ex_transform_self)self; /* ours until sample_destroy */
  return EX_OK;
}

static void sample_destroy(ex_transform_self p) {
  sample* self = (sample*)p;
  if (self == NULL) return;
  settings_free(&self->s);
  free(self);
}

static int32_t sample_process(ex_transform_self p, const ex_batch* in, const ex_emitter* out,
                              ex_error* err) {
  sample* self = (sample*)p;
  const settings* s = &self->s;
  double dropped = 0, kept = 0;
  /* The producer's record_size is the stride (records may grow in a later major). */
  if (in->count > 0 && in->record_size < sizeof(ex_record))
    return fail(err, EX_ERR_FATAL, NULL, "records of %u bytes, expected at least %u",
                (unsigned)in->record_size, (unsigned)sizeof(ex_record));
  for (size_t i = 0; i < in->count; ++i) {
    const ex_record* r =
        (const ex_record*)((const char*)in->records + i * (size_t)in->record_size);
    const ex_bytes b = s->by == BY_KEY ? r->key : r->value;
    int keep;
    if (b.ptr == NULL && s->by == BY_KEY) {
      if (s->on_missing == MISSING_REJECT) {
        static const char reason[] = "record has no key to sample by";
        out->reject(out->ctx, i, reason, sizeof(reason) - 1);
        continue;
      }
      keep = s->on_missing == MISSING_KEEP;
    } else {
      keep = s->keep_all || hash_bytes(s, b.ptr, b.len) < s->threshold;
    }
    if (keep) {
      out->keep(out->ctx, i); /* forwarded as it is, no copy */
      ++kept;
    } else {
      ++dropped; /* calling none of keep/emit/reject drops the record */
    }
  }
  if (self->host != NULL && self->host->metric != NULL) {
    if (kept > 0) self->host->metric(self->host->ctx, EX_METRIC_COUNTER, "sample_kept_total", "", kept);
    if (dropped > 0)
      self->host->metric(self->host->ctx, EX_METRIC_COUNTER, "sample_dropped_total", "", dropped);
  }
  return EX_OK;
}

/* ABI 1.3: the same checks without creating anything, so that `exactly validate` (and a
 * reload, before it stops anything) refuses `percent: 150` with its file and line. */
static int32_t sample_validate(const ex_config* config, ex_error* err) {
  settings s;
  int32_t rc = settings_parse(config, &s, err);
  settings_free(&s);
  return rc;
}

/* Hot reload: validate the whole new config, then swap; a bad one leaves us as we were. */
static int32_t sample_reconfigure(ex_transform_self p, const ex_config* config, ex_error* err) {
  sample* self = (sample*)p;
  settings next;
  int32_t rc = settings_parse(config, &next, err);
  if (rc != EX_OK) {
    settings_free(&next);
    return rc;
  }
  settings_free(&self->s);
  self->s = next;
  return EX_OK;
}

/* Members left NULL (assign, revoke, prepare_commit, commit, abort, positions, standby)
 * are optional: the host skips them. */
static const ex_transform_vtable kVtable = {
    .struct_size = sizeof(ex_transform_vtable),
    .create = sample_create,
    .destroy = sample_destroy,
    .process = sample_process,
    .reconfigure = sample_reconfigure,
    .validate = sample_validate,
};

static const ex_component kComponents[] = {
    {sizeof(ex_component), EX_KIND_TRANSFORM, "sample",
     "Keeps a deterministic share of the records, by a hash of the key or value", kFields,
     sizeof(kFields) / sizeof(kFields[0]), &kVtable},
};

/* EX_PLUGIN_BUILD_FACTS: pointer size, byte order and struct sizes of this build, which
 * the host compares with its own before it uses anything of the library (ABI 1.4). */
static const ex_plugin_descriptor kDescriptor = {
    sizeof(ex_plugin_descriptor), EX_ABI_VERSION, "sample", "0.1.0", kComponents,
    sizeof(kComponents) / sizeof(kComponents[0]), EX_PLUGIN_BUILD_FACTS};

/* The one exported symbol. NULL refuses a host of another ABI major. */
EX_EXPORT const ex_plugin_descriptor* exactly_plugin_descriptor(uint32_t host_abi_version) {
  if ((host_abi_version >> 16) != EX_ABI_VERSION_MAJOR) return NULL;
  return &kDescriptor;
}
