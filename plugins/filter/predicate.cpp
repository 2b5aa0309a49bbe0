#include "predicate.hpp"

#include <charconv>
#include <cstdlib>

namespace exactly::filter {

namespace {

// Regular expressions are RE2's, not std::regex's. libstdc++'s std::regex matches by
// recursive backtracking: on a record whose field is ~100 KB, patterns as plain as
// `^[a-z]*$` overflow the stack (the host dies of SIGSEGV) and `.*x` takes seconds per
// record at 10 KB (quadratic), so one hostile record could stop or stall the pipeline.
// RE2 matches in time linear in the field, with bounded memory and no recursion on the
// input. The price is its syntax: no backreferences and no lookaround, refused here with
// the reason (plugins/filter/README.md). Errors are returned, never logged by RE2 itself.
std::unique_ptr<const re2::RE2> compile_regex(const std::string& p) {
  re2::RE2::Options o;
  o.set_log_errors(false);
  auto re = std::make_unique<const re2::RE2>(p, o);
  if (re->ok()) return re;
  std::string why = re->error();
  switch (re->error_code()) {
    case re2::RE2::ErrorBadEscape:
      if (re->error_arg().size() == 2 && re->error_arg()[1] >= '1' && re->error_arg()[1] <= '9')
        why += " (RE2 has no backreferences: matching stays linear in the field's length)";
      break;
    case re2::RE2::ErrorBadPerlOp:
      why += " (RE2 has no lookahead or lookbehind: matching stays linear in the field's length)";
      break;
    default:
      break;
  }
  throw sdk::ConfigError("value", "is not a valid regular expression (RE2 syntax): " + why);
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
    r->pattern = compile_regex(r->value);
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
        match = re2::RE2::PartialMatch(re2::StringPiece(t.data(), t.size()), *rules.pattern);
      }
      break;
    }
  }
  return match ? Verdict::kMatch : Verdict::kNoMatch;
}

}  // namespace exactly::filter
