// Example third-party transform: upper-cases one JSON string field of each value, or
// the whole value when no field is configured. Built against the installed SDK only.
#include <exactly/sdk.hpp>
#include <simdjson.h>

#include <string>
#include <string_view>

namespace {

using exactly::sdk::Batch;
using exactly::sdk::Config;
using exactly::sdk::ConfigError;
using exactly::sdk::Emitter;
using exactly::sdk::Host;
using exactly::sdk::Status;

char upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

class UpperCase final : public exactly::sdk::Transform {
 public:
  UpperCase(Host host, const Config& config)
      : host_(host), field_(config.get_string("field", "")) {
    if (!field_.empty() && field_.front() != '/')
      throw ConfigError("field", "must be a JSON pointer such as /name, or empty");
  }

  Status process(const Batch& in, const Emitter& out) override {
    for (size_t i = 0; i < in.size(); ++i) {
      std::string_view value = exactly::sdk::view(in[i].value);
      std::string why;
      if (!rewrite(value, why)) {
        out.reject(i, why);
        continue;
      }
      if (result_ == value) {
        out.keep(i);  // nothing to change: no copy
        continue;
      }
      ex_record changed = in[i];
      changed.value = exactly::sdk::bytes(result_);
      out.emit(changed);  // the host copies the bytes before we reuse result_
    }
    return Status::ok();
  }

  Status reconfigure(const Config& config) override {
    UpperCase next(host_, config);  // validates
    field_ = next.field_;
    return Status::ok();
  }

 private:
  // Leaves the new value in result_; false (with a reason) for a record to reject.
  bool rewrite(std::string_view value, std::string& why) {
    result_.assign(value);
    if (field_.empty()) {
      upper_from(0, /*stop_at_quote=*/false);
      return true;
    }
    // simdjson reads a little past the end: parse a padded copy.
    padded_.assign(value);
    padded_.resize(value.size() + simdjson::SIMDJSON_PADDING);
    simdjson::padded_string_view json(padded_.data(), value.size(), padded_.size());
    simdjson::ondemand::document doc;
    simdjson::ondemand::value field;
    auto err = parser_.iterate(json).get(doc);
    if (!err) err = doc.at_pointer(field_).get(field);
    if (err == simdjson::NO_SUCH_FIELD || err == simdjson::INDEX_OUT_OF_BOUNDS)
      return true;  // no such field: pass the record on unchanged
    simdjson::ondemand::json_type type;
    if (!err) err = field.type().get(type);
    if (err) {
      why = "value is not the JSON this transform expects (" +
            std::string(simdjson::error_message(err)) + ")";
      return false;
    }
    if (type != simdjson::ondemand::json_type::string) {
      why = "field " + field_ + " is not a string";
      return false;
    }
    std::string_view token = field.raw_json_token();  // starts at the opening quote
    upper_from(static_cast<size_t>(token.data() - padded_.data()) + 1, /*stop_at_quote=*/true);
    return true;
  }

  // Upper-cases result_ from `at`, leaving escape sequences alone: "\n" must not become
  // "\N", nor "\u00e9" become "\U00E9".
  void upper_from(size_t at, bool stop_at_quote) {
    while (at < result_.size() && !(stop_at_quote && result_[at] == '"')) {
      if (result_[at] == '\\') {
        at += at + 1 < result_.size() && result_[at + 1] == 'u' ? 6 : 2;
        continue;
      }
      result_[at] = upper(result_[at]);
      ++at;
    }
  }

  Host host_;
  std::string field_;
  simdjson::ondemand::parser parser_;
  std::string padded_;
  std::string result_;
};

const ex_config_field kFields[] = {
    exactly::sdk::field("field", EX_CFG_STRING,
                        "JSON pointer to a string field to upper-case; empty = whole value", ""),
};

}  // namespace

EXACTLY_PLUGIN("upper_case", "0.1.0",
               exactly::sdk::transform<UpperCase>("upper_case",
                                                  "Upper-cases a JSON string field (ASCII)",
                                                  kFields))
