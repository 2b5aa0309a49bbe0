#include "util/secrets.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>

namespace exactly::secrets {
namespace {

struct Store {
  std::mutex mu;
  // Longest first, so that a secret containing another is masked whole.
  std::set<std::string, bool (*)(const std::string&, const std::string&)> values{
      [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() > b.size() : a < b;
      }};
};

Store& store() {
  static Store* s = new Store;  // used by log lines until the very end of the process
  return *s;
}

}  // namespace

void add(const std::string& value) {
  if (value.size() < 4) return;
  std::lock_guard<std::mutex> g(store().mu);
  store().values.insert(value);
}

std::string scrub(std::string_view text) {
  std::string out(text);
  std::lock_guard<std::mutex> g(store().mu);
  for (const auto& v : store().values)
    for (size_t at = out.find(v); at != std::string::npos; at = out.find(v, at + 4))
      out.replace(at, v.size(), "****");
  return out;
}

bool key_is_secret(std::string_view key) {
  std::string k(key);
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::tolower(c); });
  // The last four name credentials sent as HTTP headers (the http sink's headers map:
  // Authorization, Proxy-Authorization, X-Api-Key, Cookie); a server may quote them back
  // in the answer the sink logs.
  for (const char* word : {"password", "passwd", "secret", "token", "credential", "private.key",
                           "private_key", "jaas.config", "api.key", "apikey", "authorization",
                           "api-key", "api_key", "cookie"})
    if (k.find(word) != std::string::npos) return true;
  return false;
}

}  // namespace exactly::secrets
