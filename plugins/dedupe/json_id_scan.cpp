#include "json_id_scan.hpp"

#include <simdjson.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace exactly::dedupe {

namespace {

constexpr int kMaxDepth = 64;  // deeper documents go to simdjson (its own limit is 1024)

bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The first byte of [p, end) inside a string that needs a look: a quote, a backslash, a
// control character or a byte of a multi-byte character. 16 bytes a step where SSE2 is
// there (every x86-64): a byte at a time, this scanner was no faster than simdjson.
const unsigned char* next_special(const unsigned char* p, const unsigned char* end) {
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  for (; end - p >= 16; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // As signed bytes, under 0x20 is a control character or a byte from 0x80 on.
    const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                     _mm_cmplt_epi8(v, space));
    if (const int mask = _mm_movemask_epi8(hit)) return p + __builtin_ctz(static_cast<unsigned>(mask));
  }
#endif
  while (p < end && *p != '"' && *p != '\\' && *p >= 0x20 && *p < 0x80) ++p;
  return p;
}

// Walks the shape of a document the way simdjson's first stage sees it (strings closed,
// a backslash escaping the next byte, brackets balanced) and gives up on everything it
// does not need to decide.
struct Scanner {
  const unsigned char* p;
  const unsigned char* end;
  bool ascii = true;  // no byte from 0x80 on so far: then there is no UTF-8 to check

  void spaces() {
    while (p < end && is_space(*p)) ++p;
  }
  // At a '"': past the closing one. `plain`: no backslash inside. False for an unclosed
  // string or a control character in it (where simdjson may answer otherwise).
  bool string(bool& plain) {
    plain = true;
    for (++p;;) {
      p = next_special(p, end);
      if (p == end) return false;
      const unsigned char c = *p++;
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c >= 0x80) {
        ascii = false;
      } else {  // a backslash
        plain = false;
        if (p == end || *p < 0x20) return false;
        if (*p >= 0x80) ascii = false;
        ++p;
      }
    }
  }
  // Any one value, skipped. Scalars are not read: simdjson does not read the values it
  // skips either, so their spelling cannot change its answer.
  bool value(int depth) {
    if (p == end) return false;
    if (*p == '"') {
      bool plain;
      return string(plain);
    }
    if (*p == '{' || *p == '[') return container(depth + 1);
    const unsigned char* start = p;
    while (p < end && !is_space(*p) && *p != ',' && *p != '}' && *p != ']' && *p != ':' &&
           *p != '"' && *p != '{' && *p != '[') {
      if (*p < 0x20 || *p >= 0x80) return false;
      ++p;
    }
    return p != start;
  }
  // At a '{' or '['. With `found` (the top-level object), also the value of the first
  // member named `field`, which must be a plain string, and plain keys throughout:
  // simdjson matches keys by their raw text, so one with an escape is left to it.
  bool container(int depth, std::string_view field = {},
                 std::optional<std::string_view>* found = nullptr) {
    if (depth > kMaxDepth) return false;
    const bool object = *p == '{';
    const unsigned char close = object ? '}' : ']';
    ++p;
    spaces();
    if (p < end && *p == close) {
      ++p;
      return true;
    }
    for (;;) {
      bool wanted = false;
      if (object) {
        const unsigned char* key = p + 1;
        bool plain;
        if (p == end || *p != '"' || !string(plain)) return false;
        if (found != nullptr) {
          if (!plain) return false;
          wanted = !*found && std::string_view(reinterpret_cast<const char*>(key),
                                               static_cast<size_t>(p - 1 - key)) == field;
        }
        spaces();
        if (p == end || *p != ':') return false;
        ++p;
        spaces();
      }
      if (wanted) {  // the first member of that name decides, as simdjson's lookup
        const unsigned char* v = p + 1;
        bool plain;
        if (p == end || *p != '"' || !string(plain) || !plain) return false;
        *found = std::string_view(reinterpret_cast<const char*>(v), static_cast<size_t>(p - 1 - v));
      } else if (!value(depth)) {
        return false;
      }
      spaces();
      if (p == end) return false;
      if (*p == close) {
        ++p;
        return true;
      }
      if (*p != ',') return false;
      ++p;
      spaces();
    }
  }
};

}  // namespace

std::optional<std::string> single_field_of(std::string_view pointer) {
  if (pointer.empty() || pointer[0] != '/') return std::nullopt;
  std::string field;
  for (size_t i = 1; i < pointer.size(); ++i) {
    const char c = pointer[i];
    if (c == '/') return std::nullopt;
    if (c != '~') {
      field.push_back(c);
      continue;
    }
    if (i + 1 == pointer.size()) return std::nullopt;
    const char e = pointer[++i];
    if (e == '0') field.push_back('~');
    else if (e == '1') field.push_back('/');
    else return std::nullopt;
  }
  return field;
}

std::optional<std::string_view> scan_string_field(std::string_view doc, std::string_view field) {
  const auto* base = reinterpret_cast<const unsigned char*>(doc.data());
  Scanner s{base, base + doc.size()};
  s.spaces();
  if (s.p == s.end || *s.p != '{') return std::nullopt;
  std::optional<std::string_view> found;
  if (!s.container(1, field, &found)) return std::nullopt;
  s.spaces();
  // Text after the object, or no such member ({} included): simdjson says what it is.
  if (s.p != s.end || !found) return std::nullopt;
  // simdjson refuses a document with invalid UTF-8 anywhere in it (and the scanner saw
  // every byte: outside strings it took none from 0x80 on).
  if (!s.ascii && !simdjson::validate_utf8(doc.data(), doc.size())) return std::nullopt;
  return found;
}

}  // namespace exactly::dedupe
