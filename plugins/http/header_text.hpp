// What may go into an HTTP header line: shared by the settings' checks (configured
// headers) and the sink (record headers, idempotency keys).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <string_view>

namespace exactly::http {

inline bool header_safe(std::string_view s) {
  return s.find('\r') == std::string_view::npos && s.find('\n') == std::string_view::npos &&
         s.find('\0') == std::string_view::npos;
}

// An RFC 9110 token: what a header name may be.
inline bool token(std::string_view name) {
  if (name.empty()) return false;
  for (unsigned char c : name)
    if (c <= 32 || c >= 127 || std::strchr("()<>@,;:\\\"/[]?={}", c) != nullptr) return false;
  return true;
}

// One line of at most `max` bytes: control characters (line breaks of an HTML error
// page, NULs) become spaces, runs of spaces one space. For text the sink puts in a header
// itself (a retry's reason): a header with a line break is refused by every HTTP client,
// so the record it travels with could never be sent again.
inline std::string one_header_line(std::string_view s, size_t max = 512) {
  std::string out;
  out.reserve(std::min(s.size(), max));
  for (unsigned char c : s) {
    if (out.size() >= max) break;
    const bool space = c < 32 || c == 127;
    if (space && (out.empty() || out.back() == ' ')) continue;
    out.push_back(space ? ' ' : static_cast<char>(c));
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace exactly::http
