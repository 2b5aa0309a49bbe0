#include "dedupe_settings.hpp"

#include <cctype>

namespace exactly::dedupe {

using sdk::ConfigError;

namespace {
int64_t non_negative(const sdk::Config& c, const std::string& key) {
  int64_t v = c.get_int(key, 0);
  if (v < 0) throw ConfigError(key, "must be 0 or more, got " + std::to_string(v));
  return v;
}

const char* name_of(ConflictPolicy p) {
  switch (p) {
    case ConflictPolicy::duplicate: return "duplicate";
    case ConflictPolicy::reject: return "reject";
    case ConflictPolicy::stop: return "stop";
  }
  return "?";
}
const char* name_of(BehindPolicy p) { return p == BehindPolicy::fail ? "fail" : "ignore"; }
const char* name_of(DamagedPolicy p) { return p == DamagedPolicy::restore ? "restore" : "fail"; }

std::string ms(int64_t v) { return std::to_string(v) + " ms"; }
}  // namespace

IdSpec parse_id_spec(const sdk::Config& c) {
  IdSpec id;
  const bool by_key = c.get_bool("id.key", false);
  const std::string header = c.get_string("id.header");
  const std::string pointer = c.get_string("id.json");
  const bool by_json = c.has("id.json");
  int set = (by_key ? 1 : 0) + (header.empty() ? 0 : 1) + (by_json ? 1 : 0);
  if (set == 0)
    throw ConfigError("id", "set exactly one of id.key: true, id.header: NAME, id.json: /pointer");
  if (set > 1)
    throw ConfigError(by_json ? "id.json" : "id.header",
                      "set exactly one of id.key, id.header, id.json (more than one is set)");
  if (by_key) {
    id.source = IdSource::key;
  } else if (!header.empty()) {
    id.source = IdSource::header;
    id.header = header;
  } else {
    // Refused here rather than met by every record at run time (as the error policy's).
    if (pointer.empty())
      throw ConfigError("id.json", "an empty JSON pointer names the whole value, not a field of "
                                   "it; give the id's field, e.g. /messageId");
    if (pointer[0] != '/')
      throw ConfigError("id.json", "a JSON pointer starts with '/', e.g. /messageId; got '" +
                                       pointer + "'");
    for (size_t i = 0; i < pointer.size(); ++i)
      if (pointer[i] == '~' && (i + 1 == pointer.size() || (pointer[i + 1] != '0' && pointer[i + 1] != '1')))
        throw ConfigError("id.json", "'~' in a JSON pointer must be followed by 0 (for '~') or 1 "
                                     "(for '/'); got '" + pointer + "'");
    id.source = IdSource::json;
    id.pointer = pointer;
  }
  int64_t max_bytes = c.get_int("id.max.bytes", 128);
  if (max_bytes < 1 || max_bytes > 65536)
    throw ConfigError("id.max.bytes", "must be between 1 and 65536");
  id.max_bytes = static_cast<size_t>(max_bytes);

  return id;
}

Settings Settings::parse(const sdk::Config& c) {
  Settings s;
  s.id = parse_id_spec(c);

  s.state_dir = c.require_string("state.dir");

  std::string changelog = c.get_string("changelog", "auto");
  if (changelog == "auto") s.changelog = ChangelogMode::auto_;
  else if (changelog == "on") s.changelog = ChangelogMode::on;
  else if (changelog == "off") s.changelog = ChangelogMode::off;
  else throw ConfigError("changelog", "expected auto, on or off, got '" + changelog + "'");
  s.changelog_topic = c.get_string("changelog.topic");
  for (char ch : s.changelog_topic)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-'))
      throw ConfigError("changelog.topic", "a Kafka topic name has only letters, digits, '.', '_' "
                                           "and '-'; got '" + s.changelog_topic + "'");
  if (s.changelog_topic.size() > 249)
    throw ConfigError("changelog.topic", "a Kafka topic name has at most 249 characters");
  s.changelog_catch_up_ms = c.get_duration_ms("changelog.catch.up.timeout", 30000);
  if (s.changelog_catch_up_ms < 0)
    throw ConfigError("changelog.catch.up.timeout", "must not be negative");
  s.standby_budget_ms = c.get_duration_ms("standby.budget", 200);
  if (s.standby_budget_ms < 0 || s.standby_budget_ms > 1000)
    throw ConfigError("standby.budget", "must be between 0 and 1s (it is time per second)");

  std::string conflict = c.get_string("on.conflict", "duplicate");
  if (conflict == "duplicate") s.on_conflict = ConflictPolicy::duplicate;
  else if (conflict == "reject") s.on_conflict = ConflictPolicy::reject;
  else if (conflict == "stop") s.on_conflict = ConflictPolicy::stop;
  else throw ConfigError("on.conflict", "expected duplicate, reject or stop, got '" + conflict + "'");

  std::string behind = c.get_string("on.store.behind", "fail");
  if (behind == "fail") s.on_store_behind = BehindPolicy::fail;
  else if (behind == "ignore") s.on_store_behind = BehindPolicy::ignore;
  else throw ConfigError("on.store.behind", "expected fail or ignore, got '" + behind + "'");
  s.store_behind_tolerance = non_negative(c, "store.behind.tolerance");
  std::string damaged = c.get_string("on.store.damaged", "restore");
  if (damaged == "restore") s.on_store_damaged = DamagedPolicy::restore;
  else if (damaged == "fail") s.on_store_damaged = DamagedPolicy::fail;
  else throw ConfigError("on.store.damaged", "expected restore or fail, got '" + damaged + "'");

  s.retention.max_keys = static_cast<uint64_t>(non_negative(c, "retention.max.keys"));
  s.retention.max_bytes = static_cast<uint64_t>(non_negative(c, "retention.max.bytes"));
  s.retention.max_age_ms = non_negative(c, "retention.max.age");

  int64_t fp = c.get_int("fingerprint.bytes", 4);
  if (fp != 0 && fp != 4 && fp != 8)
    throw ConfigError("fingerprint.bytes", "must be 0 (no conflict detection), 4 or 8");
  s.fingerprint_bytes = static_cast<uint32_t>(fp);

  int64_t cache = c.get_int("rocksdb.block.cache.size", int64_t{512} << 20);
  if (cache < 0) throw ConfigError("rocksdb.block.cache.size", "must be 0 or more");
  s.block_cache_bytes = static_cast<size_t>(cache);
  int64_t wbs = c.get_int("rocksdb.write.buffer.size", 64 << 20);
  if (wbs < (1 << 20)) throw ConfigError("rocksdb.write.buffer.size", "must be at least 1MiB");
  s.tuning.write_buffer_size = static_cast<size_t>(wbs);
  s.tuning.filter = c.get_string("rocksdb.filter", "bloom");
  if (s.tuning.filter != "bloom" && s.tuning.filter != "ribbon")
    throw ConfigError("rocksdb.filter", "expected bloom or ribbon, got '" + s.tuning.filter + "'");
  s.tuning.filter_bits_per_key = c.get_double("rocksdb.filter.bits.per.key", 9);
  if (s.tuning.filter_bits_per_key < 1 || s.tuning.filter_bits_per_key > 50)
    throw ConfigError("rocksdb.filter.bits.per.key", "must be between 1 and 50");
  s.tuning.compression = c.get_string("rocksdb.compression", "zstd");
  if (s.tuning.compression != "none" && s.tuning.compression != "lz4" &&
      s.tuning.compression != "zstd")
    throw ConfigError("rocksdb.compression", "expected none, lz4 or zstd, got '" +
                                                 s.tuning.compression + "'");
  s.tuning.background_fold = c.get_bool("rocksdb.fold.background", true);
  int64_t files = c.get_int("rocksdb.fold.files.max", 256);
  if (files < 0 || files > 100000)
    throw ConfigError("rocksdb.fold.files.max", "must be between 0 and 100000");
  s.tuning.fold_files_max = static_cast<size_t>(files);
  const std::string format = c.get_string("claims.format", "own");
  if (format != "own" && format != "sst")
    throw ConfigError("claims.format", "expected own or sst, got '" + format + "'");
  s.tuning.own_files = format == "own";
  int64_t own_max = c.get_int("claims.files.max", 256);
  if (own_max < 2 || own_max > 100000)
    throw ConfigError("claims.files.max", "must be between 2 and 100000");
  s.tuning.own_files_max = static_cast<size_t>(own_max);
  return s;
}

bool same_store_layout(const Settings& a, const Settings& b, std::string& what) {
  if (a.id.source != b.id.source || a.id.header != b.id.header || a.id.pointer != b.id.pointer ||
      a.id.max_bytes != b.id.max_bytes) {
    what = "the id extraction (id.*) changed: stored claims are keyed by the old ids";
    return false;
  }
  if (a.state_dir != b.state_dir) {
    what = "state.dir changed";
    return false;
  }
  if (a.changelog != b.changelog || a.changelog_topic != b.changelog_topic) {
    what = "the changelog settings changed";
    return false;
  }
  if (a.fingerprint_bytes != b.fingerprint_bytes || a.block_cache_bytes != b.block_cache_bytes ||
      a.tuning.write_buffer_size != b.tuning.write_buffer_size || a.tuning.filter != b.tuning.filter ||
      a.tuning.filter_bits_per_key != b.tuning.filter_bits_per_key ||
      a.tuning.compression != b.tuning.compression ||
      a.tuning.background_fold != b.tuning.background_fold ||
      a.tuning.fold_files_max != b.tuning.fold_files_max || a.tuning.own_files != b.tuning.own_files) {
    what = "store options (fingerprint.bytes, claims.format, rocksdb.*) changed: stores must be reopened";
    return false;
  }
  return true;
}

std::string in_place_changes(const Settings& a, const Settings& b) {
  std::string out;
  auto moved = [&](const char* key, const std::string& from, const std::string& to) {
    if (from == to) return;
    out += (out.empty() ? "" : ", ") + std::string(key) + " " + from + " -> " + to;
  };
  moved("retention.max.keys", std::to_string(a.retention.max_keys), std::to_string(b.retention.max_keys));
  moved("retention.max.bytes", std::to_string(a.retention.max_bytes),
        std::to_string(b.retention.max_bytes));
  moved("retention.max.age", ms(a.retention.max_age_ms), ms(b.retention.max_age_ms));
  moved("on.conflict", name_of(a.on_conflict), name_of(b.on_conflict));
  moved("on.store.behind", name_of(a.on_store_behind), name_of(b.on_store_behind));
  moved("store.behind.tolerance", std::to_string(a.store_behind_tolerance),
        std::to_string(b.store_behind_tolerance));
  moved("on.store.damaged", name_of(a.on_store_damaged), name_of(b.on_store_damaged));
  moved("claims.files.max", std::to_string(a.tuning.own_files_max),
        std::to_string(b.tuning.own_files_max));
  moved("changelog.catch.up.timeout", ms(a.changelog_catch_up_ms), ms(b.changelog_catch_up_ms));
  moved("standby.budget", ms(a.standby_budget_ms), ms(b.standby_budget_ms));
  return out;
}

}  // namespace exactly::dedupe
