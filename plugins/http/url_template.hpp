// A URL with `{field}` placeholders (`{/orderId}`, `{header:tenant}`, `{key}`), each
// replaced by the record's field, percent-encoded so that a value cannot add path
// segments or query parameters of its own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "field_ref.hpp"

namespace exactly::http {

class UrlTemplate {
 public:
  // Throws std::invalid_argument on an unclosed brace or a bad field.
  static UrlTemplate parse(std::string_view text);
  // False with `reason` when a field is missing.
  bool render(RecordFields& fields, std::string& out, std::string& reason) const;
  // The URL with every field as "x": what a parser can check before any record exists.
  std::string sample() const;
  bool constant() const { return parts_.size() <= 1 && (parts_.empty() || !parts_[0].is_field); }

 private:
  struct Part {
    bool is_field = false;
    std::string literal;
    FieldRef field;
  };
  std::vector<Part> parts_;
};

void percent_encode(std::string_view in, std::string& out);

}  // namespace exactly::http
