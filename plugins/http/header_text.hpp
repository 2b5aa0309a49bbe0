// What may go into an HTTP header line: shared by the settings' checks (configured
// headers) and the sink (record headers, idempotency keys).
#pragma once

#include <cctype>
#include <cstring>
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

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace exactly::http
