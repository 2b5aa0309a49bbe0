// The filter's predicate: which records match, decided on one JSON field of the value.
#pragma once

#include <exactly/sdk.hpp>
#include <re2/re2.h>
#include <simdjson.h>

#include <memory>
#include <string>
#include <string_view>

namespace exactly::filter {

enum class Op { kEq, kNe, kExists, kMissing, kPrefix, kRegex };
enum class Action { kKeep, kDrop };
enum class OnInvalid { kReject, kDrop, kKeep };

// Immutable once built, so a running batch keeps its rules while reconfigure swaps in
// new ones.
struct Rules {
  std::string field;  // JSON pointer
  Op op = Op::kEq;
  std::string value;
  // RE2, not std::regex: it matches in time linear in the field and never recurses on
  // it (predicate.cpp says why that matters for record contents).
  std::unique_ptr<const re2::RE2> pattern;
  Action action = Action::kKeep;
  OnInvalid on_invalid = OnInvalid::kReject;

  // Throws sdk::ConfigError naming the offending key.
  static std::shared_ptr<const Rules> from(const sdk::Config& c);
};

enum class Verdict { kMatch, kNoMatch, kInvalid };

class Matcher {
 public:
  // On kInvalid, `why` says what is wrong with the value.
  Verdict test(const Rules& rules, const ex_bytes& value, std::string& why);

 private:
  // The field as text: strings unescaped, numbers/bools/null as written canonically,
  // objects and arrays as minified JSON.
  std::string_view text_of(simdjson::dom::element e);
  bool equals(const Rules& rules, simdjson::dom::element e);

  simdjson::dom::parser parser_;
  std::string scratch_;
};

}  // namespace exactly::filter
