// Turns fuzz input into a plugin config: lines "key=value" laid over a valid base config
// (a key given replaces the base's values; repeated, it is a list), as the host hands it
// to validate(). Values are not normalised by a schema here, so the plugin's own parsing
// also meets text the host would never pass: it must refuse it, never crash.
#pragma once

#include <exactly/sdk.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace exactly::fuzz {

using Pairs = std::vector<std::pair<std::string, std::string>>;

inline sdk::Config config_from(const uint8_t* data, size_t size, const Pairs& base) {
  std::string text(reinterpret_cast<const char*>(data), size);
  Pairs given;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    given.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  std::set<std::string> replaced;
  for (auto& [k, v] : given) replaced.insert(k);
  Pairs all;
  for (auto& kv : base)
    if (!replaced.count(kv.first)) all.push_back(kv);
  all.insert(all.end(), given.begin(), given.end());
  return sdk::Config(all);
}

// A refusal is a ConfigError (or a Status) naming a key; anything else escaping a config
// check is a finding: the host would report "unhandled exception" without the key.
template <typename F>
void expect_only_config_errors(F&& check) {
  try {
    sdk::Status st = check();
    if (!st.is_ok() && st.code() != EX_ERR_CONFIG) {
      std::fprintf(stderr, "validate returned %d (not EX_ERR_CONFIG): %s\n", st.code(),
                   st.message().c_str());
      std::abort();
    }
  } catch (const sdk::ConfigError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "validate threw a non-config exception: %s\n", e.what());
    std::abort();
  }
}

}  // namespace exactly::fuzz
