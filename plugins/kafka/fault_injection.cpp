#include "fault_injection.hpp"

#include <algorithm>
#include <cstdlib>

namespace exactly::kafka {

Faults Faults::from_env(const std::vector<std::string>& known, std::vector<std::string>& unknown) {
  const char* spec = std::getenv("EXACTLY_FAULTS");
  return parse(spec == nullptr ? std::string() : std::string(spec), known, unknown);
}

Faults Faults::parse(const std::string& spec, const std::vector<std::string>& known,
                     std::vector<std::string>& unknown) {
  Faults f;
  size_t at = 0;
  while (at <= spec.size()) {
    size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    std::string entry = spec.substr(at, comma - at);
    at = comma + 1;
    if (entry.empty()) continue;
    size_t eq = entry.find('=');
    std::string name = entry.substr(0, eq);
    // Another plugin's faults are its business; a name in this plugin's own namespace
    // that it does not know is a typo worth reporting.
    if (name.rfind("kafka.", 0) != 0) continue;
    int64_t count = kAlways;
    if (eq != std::string::npos) {
      const std::string n = entry.substr(eq + 1);
      char* end = nullptr;
      const long long v = std::strtoll(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || v <= 0) {
        unknown.push_back(entry);  // a count is a whole number of calls, at least 1
        continue;
      }
      count = v;
    }
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      unknown.push_back(entry);
      continue;
    }
    f.left_[name] = count;
  }
  return f;
}

bool Faults::fire(const std::string& name) {
  auto it = left_.find(name);
  if (it == left_.end()) return false;
  if (it->second == kAlways) return true;
  if (--it->second == 0) left_.erase(it);
  return true;
}

std::string Faults::describe() const {
  std::string out;
  for (const auto& [name, n] : left_) {
    if (!out.empty()) out += ", ";
    out += name + (n == kAlways ? " (every call)" : " (next " + std::to_string(n) + " calls)");
  }
  return out;
}

}  // namespace exactly::kafka
