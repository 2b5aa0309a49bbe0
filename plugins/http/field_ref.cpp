#include "field_ref.hpp"

#include <exactly/sdk.hpp>
#include <simdjson.h>

#include <stdexcept>

namespace exactly::http {

FieldRef FieldRef::parse(std::string_view t) {
  FieldRef f;
  if (t == "key") {
    f.kind = Kind::key;
  } else if (t.rfind("header:", 0) == 0 && t.size() > 7) {
    f.kind = Kind::header;
    f.name = std::string(t.substr(7));
  } else if (!t.empty() && t[0] == '/') {
    f.kind = Kind::json;
    f.name = std::string(t);
  } else {
    throw std::invalid_argument("'" + std::string(t) +
                                "' is not a field: use key, header:<name> or a JSON pointer "
                                "such as /id");
  }
  return f;
}

std::string FieldRef::describe() const {
  switch (kind) {
    case Kind::key: return "the record key";
    case Kind::header: return "header '" + name + "'";
    case Kind::json: return "JSON pointer " + name;
  }
  return {};
}

struct RecordFields::Json {
  simdjson::dom::parser parser;
  simdjson::padded_string buf;
  simdjson::dom::element root;
  bool parsed = false;
  bool valid = false;
};

RecordFields::RecordFields() : json_(std::make_unique<Json>()) {}
RecordFields::~RecordFields() = default;

void RecordFields::reset(const ex_record& r) {
  rec_ = &r;
  json_->parsed = false;
  json_->valid = false;
}

std::optional<std::string> RecordFields::get(const FieldRef& ref) {
  if (rec_ == nullptr) return std::nullopt;
  switch (ref.kind) {
    case FieldRef::Kind::key:
      if (rec_->key.ptr == nullptr) return std::nullopt;
      return std::string(sdk::view(rec_->key));
    case FieldRef::Kind::header: {
      auto h = sdk::header(*rec_, ref.name);
      if (!h) return std::nullopt;
      return std::string(*h);
    }
    case FieldRef::Kind::json: break;
  }
  auto& j = *json_;
  if (!j.parsed) {
    j.parsed = true;
    j.buf = simdjson::padded_string(sdk::view(rec_->value));
    j.valid = j.parser.parse(j.buf).get(j.root) == simdjson::SUCCESS;
  }
  if (!j.valid) return std::nullopt;
  simdjson::dom::element e;
  if (j.root.at_pointer(ref.name).get(e) != simdjson::SUCCESS) return std::nullopt;
  if (e.is_null()) return std::nullopt;
  if (e.is_string()) return std::string(std::string_view(e.get_string().value_unsafe()));
  return simdjson::minify(e);
}

}  // namespace exactly::http
