#pragma once
// JSON string literals for the host's machine-readable output (`exactly plugins --json`,
// JSON log lines).
#include <string>
#include <string_view>

namespace exactly::json {

// `s` as a quoted JSON string. Bytes that are not UTF-8 (a plugin's doc text, a file
// name, a plugin's log message) become U+FFFD, so the output always parses.
std::string quote(std::string_view s);

}  // namespace exactly::json
