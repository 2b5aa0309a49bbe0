#pragma once
// The reason a plugin gives with a rejected record (ex_emitter.reject, ex_record_errors):
// the plugin's bytes, checked before the host keeps them. It goes into a log line and the
// dead letter's exactly.error header, so it is bounded: a 5 MB reason made a 5 MB log line
// and a dead letter larger than the broker takes, which stopped the pipeline with an error
// about the record's 153 bytes (QA). A null reason (the ABI asks for one) is said, not
// built into a std::string, which threw inside the host's callback and aborted the host.
#include <cstddef>
#include <string>

#include <fmt/format.h>

namespace exactly::engine {

inline constexpr size_t kMaxRejectReason = 4096;

inline std::string reject_reason(const char* text, size_t len) {
  if (text == nullptr) return len == 0 ? "(no reason given)" : "(no reason given: the plugin passed a null reason)";
  if (len <= kMaxRejectReason) return std::string(text, len);
  // Cut on a UTF-8 character boundary: a continuation byte is 10xxxxxx.
  size_t cut = kMaxRejectReason;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{}... ({} bytes; cut at {})", std::string(text, cut), len, cut);
}

}  // namespace exactly::engine
