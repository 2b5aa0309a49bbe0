// Where a value comes from in a record: its key, one of its headers, or a JSON pointer
// into its value. Used by URL templates, the idempotency key and the rate class.
#pragma once

#include <exactly/plugin_abi.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace exactly::http {

struct FieldRef {
  enum class Kind { key, header, json };
  Kind kind = Kind::json;
  std::string name;  // header name or JSON pointer

  // "key", "header:<name>" or a JSON pointer ("/a/b", "" is the whole value is refused:
  // a body-sized key is never what anyone means). Throws std::invalid_argument.
  static FieldRef parse(std::string_view text);
  std::string describe() const;
};

// The fields of one record, the JSON value parsed at most once however many references
// are looked up.
class RecordFields {
 public:
  RecordFields();
  ~RecordFields();
  RecordFields(const RecordFields&) = delete;
  RecordFields& operator=(const RecordFields&) = delete;

  void reset(const ex_record& r);
  // The text of the field: strings unquoted, numbers and booleans as written, objects
  // and arrays as minified JSON. nullopt when absent, JSON null, or the value is not JSON.
  std::optional<std::string> get(const FieldRef& ref);

 private:
  const ex_record* rec_ = nullptr;
  struct Json;
  std::unique_ptr<Json> json_;
};

}  // namespace exactly::http
