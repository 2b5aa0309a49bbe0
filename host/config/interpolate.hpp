// ${...} in YAML values, so that passwords and per-host settings stay out of config files
// (as Kafka Connect's config providers, Vector and Redpanda Connect allow):
//   ${NAME}            the environment variable NAME (an error when it is not set)
//   ${NAME:-default}   ... or `default` when NAME is unset or empty
//   ${file:PATH}       the contents of PATH (one trailing newline dropped); always a secret
//   $${                a literal "${"
// Resolved when the file is read, before validation; a reload reads them again.
#pragma once

#include <optional>
#include <string>

namespace exactly::config {

struct Interpolated {
  std::string value;
  bool changed = false;      // at least one ${...} was replaced
  bool from_file = false;    // a ${file:...} was used (its value is a secret)
  std::string error;         // non-empty: what could not be resolved
};

Interpolated interpolate(const std::string& text);

}  // namespace exactly::config
