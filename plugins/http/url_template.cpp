#include "url_template.hpp"

#include <stdexcept>

namespace exactly::http {

void percent_encode(std::string_view in, std::string& out) {
  static const char* hex = "0123456789ABCDEF";
  for (unsigned char c : in) {
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
}

UrlTemplate UrlTemplate::parse(std::string_view t) {
  UrlTemplate u;
  size_t pos = 0;
  while (pos < t.size()) {
    size_t open = t.find('{', pos);
    if (open == std::string_view::npos) {
      u.parts_.push_back(Part{false, std::string(t.substr(pos)), {}});
      break;
    }
    if (open > pos) u.parts_.push_back(Part{false, std::string(t.substr(pos, open - pos)), {}});
    size_t close = t.find('}', open);
    if (close == std::string_view::npos)
      throw std::invalid_argument("unclosed '{' at position " + std::to_string(open));
    u.parts_.push_back(Part{true, {}, FieldRef::parse(t.substr(open + 1, close - open - 1))});
    pos = close + 1;
  }
  return u;
}

std::string UrlTemplate::sample() const {
  std::string out;
  for (const auto& p : parts_) out += p.is_field ? std::string("x") : p.literal;
  return out;
}

bool UrlTemplate::render(RecordFields& fields, std::string& out, std::string& reason) const {
  out.clear();
  for (const auto& p : parts_) {
    if (!p.is_field) {
      out += p.literal;
      continue;
    }
    auto v = fields.get(p.field);
    if (!v) {
      reason = "url: no value for {" + (p.field.kind == FieldRef::Kind::json ? p.field.name
                                       : p.field.kind == FieldRef::Kind::key ? std::string("key")
                                       : "header:" + p.field.name) +
               "} (" + p.field.describe() + ")";
      return false;
    }
    percent_encode(*v, out);
  }
  return true;
}

}  // namespace exactly::http
