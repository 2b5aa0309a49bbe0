#pragma once
// Parsing of the typed config values the schema declares: durations, sizes, ints,
// bools. Each returns nullopt on bad input; callers produce the located error.
#include <cstdint>
#include <optional>
#include <string>

namespace exactly::config {

std::optional<int64_t> parse_int(const std::string& s);
std::optional<double> parse_double(const std::string& s);
std::optional<bool> parse_bool(const std::string& s);
// The longest duration a setting takes (100 years).
constexpr int64_t kMaxDurationDays = 36500;
// "250ms", "5s", "2m", "1h", "7d" or a plain integer of milliseconds; at most
// kMaxDurationDays.
std::optional<int64_t> parse_duration_ms(const std::string& s);
// "512", "64KiB", "16MiB", "1GiB", "10MB", "1TB"; plain integers are bytes; at most 2^62.
std::optional<int64_t> parse_size_bytes(const std::string& s);
// Levenshtein distance, for "did you mean".
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace exactly::config
