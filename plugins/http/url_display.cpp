#include "url_display.hpp"

#include <algorithm>
#include <cctype>

namespace exactly::http {

namespace {
bool secret_name(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* word : {"key", "token", "secret", "password", "passwd", "pwd", "auth",
                           "signature", "sig", "credential", "session"})
    if (name.find(word) != std::string::npos) return true;
  return false;
}
}  // namespace

std::string display_url(const std::string& url) {
  std::string out = url;
  // userinfo: scheme://user:password@host -> scheme://user:***@host
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t end = out.find_first_of("/?#", start);
    const size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
    if (at != std::string::npos && at >= start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  const size_t q = out.find('?');
  if (q == std::string::npos) return out;
  const size_t hash = out.find('#', q);
  std::string query = out.substr(q + 1, hash == std::string::npos ? std::string::npos : hash - q - 1);
  std::string masked;
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    std::string pair = query.substr(pos, amp - pos);
    const size_t eq = pair.find('=');
    if (eq != std::string::npos && secret_name(pair.substr(0, eq))) pair = pair.substr(0, eq + 1) + "***";
    if (pos > 0) masked += '&';
    masked += pair;
    pos = amp + 1;
  }
  return out.substr(0, q + 1) + masked + (hash == std::string::npos ? "" : out.substr(hash));
}

}  // namespace exactly::http
