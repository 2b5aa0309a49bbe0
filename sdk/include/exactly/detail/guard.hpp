// The exception guard at the C ABI boundary: whatever a plugin's C++ code throws
// becomes an ex_status and an ex_error, so nothing C++ ever reaches the host.
// Part of <exactly/sdk.hpp>, which includes it after the public API it adapts: plugin
// authors include sdk.hpp, never this.
#pragma once

#ifndef EXACTLY_SDK_HPP
#error "include <exactly/sdk.hpp>: the headers in exactly/detail/ are its internals"
#endif

#include <cstring>
#include <exception>
#include <string>

namespace exactly::sdk::detail {

inline void copy_cstr(char* dst, size_t cap, const std::string& s) {
  size_t n = s.size() < cap - 1 ? s.size() : cap - 1;
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

// Whether byte i of s starts a UTF-8 character (is not a continuation byte), so that a
// cut there leaves no half character behind.
inline bool starts_char(const std::string& s, size_t i) {
  return i >= s.size() || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
}

// A message longer than the ABI's array keeps its start (what failed) and its end (often
// what to do about it: a hint appended after a long library text), joined by " ... ",
// instead of losing the end. The end gets up to a third of the room.
inline void copy_message(char* dst, size_t cap, const std::string& s) {
  if (s.size() < cap) return copy_cstr(dst, cap, s);
  static constexpr char kCut[] = " ... ";
  const size_t room = cap - 1 - (sizeof(kCut) - 1);
  size_t tail = s.size() - room / 3;
  while (!starts_char(s, tail)) ++tail;
  size_t head = room - (s.size() - tail);
  while (head > 0 && !starts_char(s, head)) --head;
  std::string m = s.substr(0, head) + kCut + s.substr(tail);
  copy_cstr(dst, cap, m);
}

inline int32_t fill(ex_error* err, const Status& s) {
  if (err != nullptr && !s.is_ok()) {
    err->code = s.code();
    copy_cstr(err->key, sizeof(err->key), s.key());
    copy_message(err->message, sizeof(err->message), s.message());
  }
  return s.code();
}

template <typename F>
int32_t guard(ex_error* err, F&& f) noexcept {
  try {
    return fill(err, f());
  } catch (const ConfigError& e) {
    return fill(err, Status::config(e.key(), e.what()));
  } catch (const StatusError& e) {
    return fill(err, e.status());
  } catch (const std::exception& e) {
    return fill(err, Status::fatal(std::string("unhandled exception: ") + e.what()));
  } catch (...) {
    return fill(err, Status::fatal("unhandled non-standard exception"));
  }
}

}  // namespace exactly::sdk::detail
