#include "predicate.hpp"

#include <charconv>
#include <cstdlib>

namespace exactly::filter {

namespace {

// What std::regex (libstdc++) cannot be trusted with: it reads the number of a
// back-reference or a {m,n} bound into an int without a bound (signed overflow, found by
// fuzz_filter_config), and compiles and matches recursively (a deep nesting overflows the
// stack). Patterns past these limits are refused before it sees them.
constexpr size_t kMaxPatternBytes = 4096;
constexpr int kMaxGroupDepth = 32;
constexpr size_t kMaxNumberDigits = 6;

void check_regex_text(const std::string& p) {
  auto refuse = [](const std::string& why) {
    throw sdk::ConfigError("value", "is not a usable regular expression: " + why);
  };
  if (p.size() > kMaxPatternBytes) refuse("longer than 4096 bytes");
  int depth = 0;
  bool in_braces = false;
  size_t digits = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    char ch = p[i];
    bool digit = ch >= '0' && ch <= '9';
    digits = digit ? digits + 1 : 0;
    if (ch == '\\' && i + 1 < p.size()) {
      size_t j = i + 1, run = 0;
      while (j < p.size() && p[j] >= '0' && p[j] <= '9') ++j, ++run;
      if (run > kMaxNumberDigits) refuse("a back-reference number over 6 digits");
      i = run > 0 ? j - 1 : i + 1;  // an escaped character is never structure
      digits = 0;
      continue;
    }
    if (ch == '{') in_braces = true;
    else if (ch == '}') in_braces = false;
    else if (ch == '(' && ++depth > kMaxGroupDepth) refuse("groups nested deeper than 32");
    else if (ch == ')' && depth > 0) --depth;
    if (in_braces && digits > kMaxNumberDigits) refuse("a repetition bound over 6 digits");
  }
}

}  // namespace

using sdk::ConfigError;

namespace {

void check_pointer(const std::string& p) {
  if (!p.empty() && p.front() != '/')
    throw ConfigError("field", "must be a JSON pointer such as /type (starting with '/')");
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] == '~' && (i + 1 == p.size() || (p[i + 1] != '0' && p[i + 1] != '1')))
      throw ConfigError("field", "'~' in a JSON pointer must be followed by 0 or 1");
}

bool parse_number(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return *end == '\0';
}

}  // namespace

std::shared_ptr<const Rules> Rules::from(const sdk::Config& c) {
  auto r = std::make_shared<Rules>();
  r->field = c.require_string("field");
  check_pointer(r->field);

  std::string op = c.get_string("op", "eq");
  if (op == "eq") r->op = Op::kEq;
  else if (op == "ne") r->op = Op::kNe;
  else if (op == "exists") r->op = Op::kExists;
  else if (op == "missing") r->op = Op::kMissing;
  else if (op == "prefix") r->op = Op::kPrefix;
  else if (op == "regex") r->op = Op::kRegex;
  else throw ConfigError("op", "must be one of eq, ne, exists, missing, prefix, regex");

  bool needs_value = r->op != Op::kExists && r->op != Op::kMissing;
  if (needs_value && !c.has("value")) throw ConfigError("value", "is required for op " + op);
  r->value = c.get_string("value", "");
  if (r->op == Op::kRegex) {
    check_regex_text(r->value);
    try {
      r->pattern.emplace(r->value, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      throw ConfigError("value", std::string("is not a valid regular expression: ") + e.what());
    }
  }

  std::string action = c.get_string("action", "keep");
  if (action == "keep") r->action = Action::kKeep;
  else if (action == "drop") r->action = Action::kDrop;
  else throw ConfigError("action", "must be keep or drop");

  std::string inv = c.get_string("on.invalid", "reject");
  if (inv == "reject") r->on_invalid = OnInvalid::kReject;
  else if (inv == "drop") r->on_invalid = OnInvalid::kDrop;
  else if (inv == "keep") r->on_invalid = OnInvalid::kKeep;
  else throw ConfigError("on.invalid", "must be reject, drop or keep");
  return r;
}

std::string_view Matcher::text_of(simdjson::dom::element e) {
  using T = simdjson::dom::element_type;
  switch (e.type()) {
    case T::STRING:
      return e.get_string().value_unsafe();
    case T::INT64: {
      scratch_.resize(24);
      auto [end, ec] = std::to_chars(scratch_.data(), scratch_.data() + 24, e.get_int64().value_unsafe());
      scratch_.resize(static_cast<size_t>(end - scratch_.data()));
      return scratch_;
    }
    case T::UINT64: {
      scratch_.resize(24);
      auto [end, ec] = std::to_chars(scratch_.data(), scratch_.data() + 24, e.get_uint64().value_unsafe());
      scratch_.resize(static_cast<size_t>(end - scratch_.data()));
      return scratch_;
    }
    case T::BOOL:
      return e.get_bool().value_unsafe() ? "true" : "false";
    case T::NULL_VALUE:
      return "null";
    default:  // double, object, array
      scratch_ = simdjson::minify(e);
      return scratch_;
  }
}

bool Matcher::equals(const Rules& rules, simdjson::dom::element e) {
  if (text_of(e) == rules.value) return true;
  // 42, 42.0 and 4.2e1 are the same number whatever way the value was written.
  if (e.is_number()) {
    double want = 0;
    return parse_number(rules.value, want) && e.get_double().value_unsafe() == want;
  }
  return false;
}

Verdict Matcher::test(const Rules& rules, const ex_bytes& value, std::string& why) {
  if (value.ptr == nullptr) {
    why = "value is absent (null); filter on " + rules.field + " needs a JSON value";
    return Verdict::kInvalid;
  }
  simdjson::dom::element root;
  auto err = parser_.parse(reinterpret_cast<const char*>(value.ptr), value.len).get(root);
  if (err) {
    why = "value is not valid JSON (" + std::string(simdjson::error_message(err)) +
          "); filter on " + rules.field + " needs a JSON value";
    return Verdict::kInvalid;
  }
  simdjson::dom::element field;
  bool present = !root.at_pointer(rules.field).get(field);
  bool match = false;
  switch (rules.op) {
    case Op::kExists: match = present; break;
    case Op::kMissing: match = !present; break;
    case Op::kEq: match = present && equals(rules, field); break;
    case Op::kNe: match = !(present && equals(rules, field)); break;
    case Op::kPrefix: match = present && text_of(field).substr(0, rules.value.size()) == rules.value; break;
    case Op::kRegex: {
      if (present) {
        std::string_view t = text_of(field);
        match = std::regex_search(t.begin(), t.end(), *rules.pattern);
      }
      break;
    }
  }
  return match ? Verdict::kMatch : Verdict::kNoMatch;
}

}  // namespace exactly::filter
