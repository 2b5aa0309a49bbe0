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
  // Lower case, and '-' and '_' read as '.', so that one word covers every spelling
  // (api.key, X-Api-Key, api_key; private.key, private_key).
  std::string k(key);
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) {
    return c == '-' || c == '_' ? '.' : static_cast<char>(std::tolower(c));
  });
  // authorization and cookie: credentials sent as HTTP headers (the http sink's headers
  // map); a server may quote them back in the answer the sink logs.
  for (const char* word : {"password", "passwd", "secret", "token", "credential", "private.key",
                           "jaas.config", "api.key", "apikey", "authorization", "cookie"})
    if (k.find(word) != std::string::npos) return true;
  return false;
}

}  // namespace exactly::secrets
