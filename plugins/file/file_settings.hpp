// The file source's and sink's settings, parsed and checked without touching the file
// system: create() and validate() (ABI 1.3) share these. Throw sdk::ConfigError.
#pragma once

#include <exactly/sdk.hpp>

#include <cstddef>
#include <string>

namespace exactly::file {

struct SourceSettings {
  std::string path;
  bool follow = false;
  size_t batch_size = 1024;
  std::string offsets_path;  // empty: no store of its own
  size_t max_line_bytes = size_t{64} << 20;

  static SourceSettings parse(const sdk::Config& c);
};

struct SinkSettings {
  std::string path;
  bool fsync = true;
  bool json = false;  // format: json (json_line.hpp); else one value per line

  static SinkSettings parse(const sdk::Config& c);
};

}  // namespace exactly::file
