#include "id_extractor.hpp"

#include <exactly/sdk.hpp>
#include <simdjson.h>

#include "json_id_scan.hpp"

#include <cstring>

namespace exactly::dedupe {

namespace {
// JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool is_json_number(std::string_view t) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i > from;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

// Hex digit values, 0x80 for anything else. A table instead of range tests: random hex
// digits made those branches mispredict about every other character.
struct HexTable {
  uint8_t v[256];
  constexpr HexTable() : v() {
    for (int i = 0; i < 256; ++i) v[i] = 0x80;
    for (int i = 0; i < 10; ++i) v['0' + i] = static_cast<uint8_t>(i);
    for (int i = 0; i < 6; ++i) {
      v['a' + i] = static_cast<uint8_t>(10 + i);
      v['A' + i] = static_cast<uint8_t>(10 + i);
    }
  }
};
constexpr HexTable kHex;
// Where each byte's two digits start in the 36-character text form.
constexpr uint8_t kDigitPairs[16] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};
}  // namespace

bool parse_uuid(std::string_view t, uint8_t out[16]) {
  if (t.size() != 36 || t[8] != '-' || t[13] != '-' || t[18] != '-' || t[23] != '-')
    return false;
  const auto* p = reinterpret_cast<const uint8_t*>(t.data());
  uint8_t bad = 0;
  for (int o = 0; o < 16; ++o) {
    uint8_t hi = kHex.v[p[kDigitPairs[o]]], lo = kHex.v[p[kDigitPairs[o] + 1]];
    bad |= hi | lo;
    out[o] = static_cast<uint8_t>((hi << 4) | (lo & 0x0f));
  }
  return (bad & 0x80) == 0;
}

void encode_store_key(std::string_view id, std::string& out) {
  uint8_t u[16];
  if (parse_uuid(id, u)) {
    out.append(reinterpret_cast<const char*>(u), 16);
    return;
  }
  out.append(id.data(), id.size());
  if (id.size() >= 16) out.push_back('\0');
}

struct IdExtractor::Json {
  simdjson::ondemand::parser parser;
  std::vector<char> buf;  // value copy with simdjson's padding behind it
  std::optional<std::string> field;  // the pointer's one top-level member, for the fast path
};

IdExtractor::IdExtractor(IdSpec spec) : spec_(std::move(spec)) {
  if (spec_.source != IdSource::json) return;
  json_ = std::make_unique<Json>();
  if (spec_.json_fast_path) json_->field = single_field_of(spec_.pointer);
}
IdExtractor::~IdExtractor() = default;

bool IdExtractor::accept(std::string_view id, bool present, std::string& out,
                         std::string& reason) const {
  if (!present) {
    switch (spec_.source) {
      case IdSource::key: reason = "missing id: the record has no key"; break;
      case IdSource::header: reason = "missing id: no header '" + spec_.header + "'"; break;
      case IdSource::json: reason = "missing id: nothing at JSON pointer " + spec_.pointer; break;
    }
    return false;
  }
  if (id.empty()) {
    reason = "empty id";
    return false;
  }
  if (id.size() > spec_.max_bytes) {
    reason = "id is " + std::to_string(id.size()) + " bytes, over id.max.bytes=" +
             std::to_string(spec_.max_bytes);
    return false;
  }
  encode_store_key(id, out);
  return true;
}

bool IdExtractor::extract(const ex_record& r, std::string& out, std::string& reason) {
  switch (spec_.source) {
    case IdSource::key:
      return accept(sdk::view(r.key), r.key.ptr != nullptr, out, reason);
    case IdSource::header: {
      auto h = sdk::header(r, spec_.header);
      return accept(h.value_or(std::string_view{}), h.has_value(), out, reason);
    }
    case IdSource::json:
      return from_json(sdk::view(r.value), out, reason);
  }
  return false;
}

bool IdExtractor::from_json(std::string_view value, std::string& out, std::string& reason) {
  using namespace simdjson;
  if (value.empty()) {
    reason = "id.json: the value is empty, not JSON";
    return false;
  }
  if (json_->field) {
    if (auto id = scan_string_field(value, *json_->field)) return accept(*id, true, out, reason);
  }
  auto& buf = json_->buf;
  if (buf.size() < value.size() + SIMDJSON_PADDING) buf.resize(value.size() + SIMDJSON_PADDING);
  std::memcpy(buf.data(), value.data(), value.size());
  std::memset(buf.data() + value.size(), 0, SIMDJSON_PADDING);

  ondemand::document doc;
  auto err = json_->parser.iterate(buf.data(), value.size(), buf.size()).get(doc);
  ondemand::value v;
  if (!err) err = doc.at_pointer(spec_.pointer).get(v);
  if (err == NO_SUCH_FIELD || err == INDEX_OUT_OF_BOUNDS) return accept({}, false, out, reason);
  if (err) {
    // The pointer itself was checked with the config: simdjson's "invalid pointer" or
    // "incorrect type" here means the value is not a JSON object or array (plain text, a
    // number), which it used to report as a pointer syntax error.
    if (err == INVALID_JSON_POINTER || err == INCORRECT_TYPE)
      reason = "id.json: the value is not a JSON object or array, so " + spec_.pointer +
               " cannot be looked up in it";
    else
      reason = std::string("id.json: the value is not valid JSON (") + error_message(err) + ")";
    return false;
  }
  ondemand::json_type type;
  if ((err = v.type().get(type))) {
    reason = std::string("id.json: the value is not valid JSON (") + error_message(err) + ")";
    return false;
  }
  std::string_view id;
  switch (type) {
    case ondemand::json_type::string:
      if ((err = v.get_string().get(id))) {
        reason = std::string("id.json: bad string at ") + spec_.pointer + " (" + error_message(err) + ")";
        return false;
      }
      break;
    case ondemand::json_type::number:
      id = v.raw_json_token();
      while (!id.empty() && (id.back() == ' ' || id.back() == '\n' || id.back() == '\r' ||
                             id.back() == '\t' || id.back() == ',' || id.back() == '}' ||
                             id.back() == ']'))
        id.remove_suffix(1);
      // simdjson types a value by its first byte: "0123", "1.", "1x2" were taken as ids
      // (and matched the strings "0123", ...), where JSON has no such number (QA).
      if (!is_json_number(id)) {
        reason = "id.json: the value at " + spec_.pointer + " is not a valid JSON number ('" +
                 std::string(id.substr(0, 64)) + "')";
        return false;
      }
      break;
    case ondemand::json_type::null:
      return accept({}, false, out, reason);
    default:
      reason = "id.json: the value at " + spec_.pointer + " is not a string or a number";
      return false;
  }
  return accept(id, true, out, reason);
}

}  // namespace exactly::dedupe
