#include "json_line.hpp"

#include <simdjson.h>

#include <cstdio>
#include <string_view>

namespace exactly::file {
namespace {

void append_base64(std::string& out, std::string_view b) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  for (; i + 3 <= b.size(); i += 3) {
    const uint32_t n = (static_cast<uint8_t>(b[i]) << 16) | (static_cast<uint8_t>(b[i + 1]) << 8) |
                       static_cast<uint8_t>(b[i + 2]);
    out += kAlphabet[n >> 18];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (const size_t rest = b.size() - i; rest > 0) {
    uint32_t n = static_cast<uint8_t>(b[i]) << 16;
    if (rest == 2) n |= static_cast<uint8_t>(b[i + 1]) << 8;
    out += kAlphabet[n >> 18];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
}

void append_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void append_bytes(std::string& out, const ex_bytes& b) {
  if (b.ptr == nullptr) {
    out += "null";
    return;
  }
  std::string_view v(reinterpret_cast<const char*>(b.ptr), b.len);
  if (simdjson::validate_utf8(v.data(), v.size())) {
    append_string(out, v);
  } else {
    out += "{\"base64\":\"";
    append_base64(out, v);
    out += "\"}";
  }
}

}  // namespace

void append_json_record(std::string& out, const ex_record& r) {
  out += "{\"key\":";
  append_bytes(out, r.key);
  out += ",\"value\":";
  append_bytes(out, r.value);
  out += ",\"headers\":[";
  for (uint32_t i = 0; i < r.header_count; ++i) {
    if (i > 0) out += ',';
    out += '[';
    append_bytes(out, r.headers[i].key);
    out += ',';
    append_bytes(out, r.headers[i].value);
    out += ']';
  }
  out += "],\"timestamp\":";
  out += r.timestamp_ms >= 0 ? std::to_string(r.timestamp_ms) : "null";
  out += '}';
}

}  // namespace exactly::file
