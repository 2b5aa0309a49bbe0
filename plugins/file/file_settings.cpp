#include "file_settings.hpp"

namespace exactly::file {

SourceSettings SourceSettings::parse(const sdk::Config& c) {
  SourceSettings s;
  s.path = c.require_string("path");
  if (s.path.empty()) throw sdk::ConfigError("path", "must not be empty");
  s.follow = c.get_bool("follow", false);
  s.offsets_path = c.get_string("offsets.path", "");
  int64_t batch = c.get_int("batch.size", 1024);
  if (batch < 1 || batch > (1 << 20)) throw sdk::ConfigError("batch.size", "must be between 1 and 1048576");
  s.batch_size = static_cast<size_t>(batch);
  int64_t max_line = c.get_size("max.line.bytes", int64_t{64} << 20);
  if (max_line < 1 || max_line > (int64_t{1} << 40))
    throw sdk::ConfigError("max.line.bytes", "must be between 1 and 1 TiB");
  s.max_line_bytes = static_cast<size_t>(max_line);
  return s;
}

SinkSettings SinkSettings::parse(const sdk::Config& c) {
  SinkSettings s;
  s.path = c.require_string("path");
  if (s.path.empty()) throw sdk::ConfigError("path", "must not be empty");
  s.fsync = c.get_bool("fsync", true);
  const std::string format = c.get_string("format", "value");
  if (format == "json") s.json = true;
  else if (format != "value") throw sdk::ConfigError("format", "expected value or json, got '" + format + "'");
  return s;
}

}  // namespace exactly::file
