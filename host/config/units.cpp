#include "config/units.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

namespace exactly::config {

std::optional<int64_t> parse_int(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return v;
}

std::optional<double> parse_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  // ERANGE also flags underflow: "1e-400" would otherwise pass as 0, a value nobody wrote.
  if (*end != '\0' || !std::isfinite(v) || errno == ERANGE) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(const std::string& s) {
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  if (l == "true" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "no" || l == "off") return false;
  return std::nullopt;
}

namespace {
// Splits "12.5MiB" into 12.5 and "mib".
bool split_number_unit(const std::string& s, double* num, std::string* unit) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return false;
  auto n = parse_double(s.substr(0, i));
  if (!n || *n < 0) return false;
  *num = *n;
  std::string u = s.substr(i);
  while (!u.empty() && u.front() == ' ') u.erase(u.begin());
  std::transform(u.begin(), u.end(), u.begin(), [](unsigned char c) { return std::tolower(c); });
  *unit = u;
  return true;
}
}  // namespace

namespace {
// Anything longer is a typo, and a value near int64's end overflowed later, where
// durations become microseconds or deadlines (a commit interval of 107000d spun at
// full CPU handling nothing; 999999999999d came out negative).
constexpr double kMaxDurationMs = kMaxDurationDays * 86400e3;
// Sizes stop well before int64's end for the same reason (byte counts get added up).
constexpr double kMaxSizeBytes = 4611686018427387904.0;  // 2^62

std::optional<int64_t> within(double v, double max) {
  if (!(v >= 0) || v > max) return std::nullopt;
  return static_cast<int64_t>(std::llround(v));
}
}  // namespace

std::optional<int64_t> parse_duration_ms(const std::string& s) {
  if (auto i = parse_int(s)) return within(static_cast<double>(*i), kMaxDurationMs);
  double n;
  std::string u;
  if (!split_number_unit(s, &n, &u)) return std::nullopt;
  static const std::vector<std::pair<std::string, double>> units = {
      {"ms", 1}, {"s", 1e3}, {"m", 60e3}, {"min", 60e3}, {"h", 3600e3}, {"d", 86400e3}};
  for (auto& [name, mul] : units)
    if (u == name) return within(n * mul, kMaxDurationMs);
  return std::nullopt;
}

std::optional<int64_t> parse_size_bytes(const std::string& s) {
  if (auto i = parse_int(s)) return within(static_cast<double>(*i), kMaxSizeBytes);
  double n;
  std::string u;
  if (!split_number_unit(s, &n, &u)) return std::nullopt;
  static const std::vector<std::pair<std::string, double>> units = {
      {"b", 1},          {"kb", 1e3},         {"mb", 1e6},          {"gb", 1e9},
      {"tb", 1e12},      {"kib", 1024.0},     {"mib", 1048576.0},   {"gib", 1073741824.0},
      {"tib", 1099511627776.0}, {"k", 1024.0}, {"m", 1048576.0},    {"g", 1073741824.0}};
  for (auto& [name, mul] : units)
    if (u == name) return within(n * mul, kMaxSizeBytes);
  return std::nullopt;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace exactly::config
