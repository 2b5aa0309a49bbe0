// Values that must never be printed: passwords and the like, whether written in the YAML
// under a key that names a secret or interpolated into it from ${file:...}. Every line
// the host prints (logs, including what plugins log through the host, config errors,
// the summary) passes through scrub().
#pragma once

#include <string>
#include <string_view>

namespace exactly::secrets {

// Remembers `value` (values shorter than 4 bytes are not worth hiding and would mask
// ordinary text).
void add(const std::string& value);

// `text` with every remembered value replaced by "****".
std::string scrub(std::string_view text);

// True for keys whose value is a secret by name: password, secret, token, credential(s),
// private key, sasl.jaas.config, api key, authorization, cookie, ... (case-insensitive,
// anywhere in the dotted key).
bool key_is_secret(std::string_view key);

}  // namespace exactly::secrets
