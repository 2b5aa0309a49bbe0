#include "config/interpolate.hpp"

#include "config/read_regular_file.hpp"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace exactly::config {
namespace {

constexpr size_t kMaxFileBytes = 1 << 20;  // a secret, not a data set

bool valid_name(const std::string& n) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace

Interpolated interpolate(const std::string& text) {
  Interpolated r;
  if (text.find('$') == std::string::npos) {
    r.value = text;
    return r;
  }
  std::string& out = r.value;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 3, "$${") == 0) {
      out += "${";
      i += 3;
      r.changed = true;
      continue;
    }
    if (text.compare(i, 2, "${") != 0) {
      out += text[i++];
      continue;
    }
    size_t end = text.find('}', i + 2);
    if (end == std::string::npos) {
      r.error = "unterminated '${' (write $${ for a literal ${)";
      return r;
    }
    std::string ref = text.substr(i + 2, end - i - 2);
    i = end + 1;
    r.changed = true;
    if (ref.rfind("file:", 0) == 0) {
      std::string path = ref.substr(5);
      std::string data, why;
      if (!read_regular_file(path, kMaxFileBytes, data, why)) {
        r.error = "${file:" + path + "}: cannot read " + (path.empty() ? "(empty path)" : path) +
                  (path.empty() ? "" : ": " + why);
        return r;
      }
      if (data.size() > kMaxFileBytes) {
        r.error = "${file:" + path + "}: larger than 1 MiB";
        return r;
      }
      if (!data.empty() && data.back() == '\n') data.pop_back();
      if (!data.empty() && data.back() == '\r') data.pop_back();
      out += data;
      r.from_file = true;
      continue;
    }
    std::string name = ref, dflt;
    bool has_default = false;
    if (size_t d = ref.find(":-"); d != std::string::npos) {
      name = ref.substr(0, d);
      dflt = ref.substr(d + 2);
      has_default = true;
      // "${A:-${B}}" read as default "${B" and a stray '}': a silent literal.
      if (dflt.find("${") != std::string::npos) {
        r.error = "${" + ref + "...: a default cannot hold another ${...} reference (nesting is "
                  "not supported)";
        return r;
      }
    }
    if (!valid_name(name)) {
      r.error = "${" + ref + "}: '" + name + "' is not an environment variable name (letters, digits, _)";
      return r;
    }
    const char* v = std::getenv(name.c_str());
    if (v == nullptr || (*v == '\0' && has_default)) {
      if (!has_default) {
        r.error = "environment variable " + name + " is not set (use ${" + name + ":-default} for a default)";
        return r;
      }
      out += dflt;
    } else {
      out += v;
    }
  }
  return r;
}

}  // namespace exactly::config
