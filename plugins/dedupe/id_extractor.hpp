// Turns a record into the store key of its id: from the record key, a header, or a
// JSON pointer into the value. Canonical UUID text becomes its 16 bytes.
#pragma once

#include <exactly/plugin_abi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace exactly::dedupe {

enum class IdSource { key, header, json };

struct IdSpec {
  IdSource source = IdSource::key;
  std::string header;   // id.header
  std::string pointer;  // id.json
  size_t max_bytes = 128;
  // id.json's fast path for a top-level string member (json_id_scan.hpp); off only where
  // its answers are held against simdjson's (its test, fuzz target and benchmark).
  bool json_fast_path = true;
};

// Store keys are unambiguous by length: UUIDs are exactly 16 bytes; other ids shorter
// than 16 bytes are stored as they are; other ids of 16 bytes or more get a trailing
// 0x00, so a 16-byte raw id can never collide with a UUID's binary form.
bool parse_uuid(std::string_view text, uint8_t out[16]);
void encode_store_key(std::string_view id, std::string& out);

class IdExtractor {
 public:
  explicit IdExtractor(IdSpec spec);
  ~IdExtractor();
  IdExtractor(const IdExtractor&) = delete;
  IdExtractor& operator=(const IdExtractor&) = delete;

  // Appends the store key to `out` and returns true, or returns false with `reason`.
  bool extract(const ex_record& r, std::string& out, std::string& reason);
  const IdSpec& spec() const { return spec_; }

 private:
  bool from_json(std::string_view value, std::string& out, std::string& reason);
  bool accept(std::string_view id, bool present, std::string& out, std::string& reason) const;

  IdSpec spec_;
  struct Json;
  std::unique_ptr<Json> json_;
};

}  // namespace exactly::dedupe
