#pragma once
// How log lines are written, chosen once at start-up by the command line (callers that
// only log need util/log.hpp).
#include "util/log.hpp"

#include <optional>
#include <string_view>

namespace exactly::log {

enum class Format {
  text,  // "<utc time> <LEVEL> [<scope>] message", for people and journald
  json,  // one JSON object per line, for log shippers
};

void set_format(Format f);
Format format();

// "debug", "info", "warn", "error" (the spelling of --log-level), or nothing.
std::optional<Level> parse_level(std::string_view name);
// "text", "json" (the spelling of --log-format), or nothing.
std::optional<Format> parse_format(std::string_view name);

}  // namespace exactly::log
