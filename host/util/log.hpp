#pragma once
// A small thread-safe logger to stderr (spdlog). Lines: "<utc time> <LEVEL> [<scope>] message",
// or one JSON object per line with --log-format json.
#include <fmt/format.h>

#include <string>
#include <string_view>

namespace exactly::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3 };

void set_level(Level l);
Level level();
void write(Level l, std::string_view scope, std::string_view msg);

template <typename... A>
void info(std::string_view scope, fmt::format_string<A...> f, A&&... a) {
  if (level() <= Level::info) write(Level::info, scope, fmt::format(f, std::forward<A>(a)...));
}
template <typename... A>
void warn(std::string_view scope, fmt::format_string<A...> f, A&&... a) {
  if (level() <= Level::warn) write(Level::warn, scope, fmt::format(f, std::forward<A>(a)...));
}
template <typename... A>
void error(std::string_view scope, fmt::format_string<A...> f, A&&... a) {
  write(Level::error, scope, fmt::format(f, std::forward<A>(a)...));
}
template <typename... A>
void debug(std::string_view scope, fmt::format_string<A...> f, A&&... a) {
  if (level() <= Level::debug) write(Level::debug, scope, fmt::format(f, std::forward<A>(a)...));
}

}  // namespace exactly::log
