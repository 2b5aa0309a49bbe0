#include "visible_text.hpp"

#include <exactly/sdk.hpp>

#include <cstdint>
#include <cstdio>

namespace exactly::kafka {
namespace {

// Decodes one UTF-8 sequence at s[i]; returns its length, or 0 when it is not valid.
size_t decode(const std::string& s, size_t i, uint32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  return n;
}

bool invisible(uint32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0) || cp == 0xAD ||
         (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
         (cp >= 0x2060 && cp <= 0x2064) || cp == 0xFEFF;
}

}  // namespace

std::string invisible_text_problem(const std::string& v) {
  if (v.empty()) return "is empty";
  if (v.front() == ' ' || v.back() == ' ') return "starts or ends with a space";
  for (size_t i = 0; i < v.size();) {
    uint32_t cp = 0;
    size_t n = decode(v, i, cp);
    if (n == 0) return "is not valid UTF-8 (byte " + std::to_string(i + 1) + ")";
    if (invisible(cp)) {
      char u[16];
      std::snprintf(u, sizeof(u), "U+%04X", cp);
      return std::string("contains an invisible character, ") + u + ", at byte " + std::to_string(i + 1) +
             " (pasted from a document?); retype it";
    }
    i += n;
  }
  return "";
}

void require_visible_text(const std::string& key, const std::string& v) {
  std::string why = invisible_text_problem(v);
  if (!why.empty()) throw sdk::ConfigError(key, "'" + v + "' " + why);
}

}  // namespace exactly::kafka
