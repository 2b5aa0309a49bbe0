#include "config/model.hpp"

#include <algorithm>

#include "util/secrets.hpp"

#include <fmt/format.h>

namespace exactly::config {

std::string Diagnostic::str() const {
  // A key or value quoted in the message may hold a NUL (it cut the message short where
  // it was printed as a C string) or a terminal escape: shown as \xNN. Line breaks and
  // tabs are the message's own.
  std::string shown;
  for (const char c : message) {
    const auto ch = static_cast<unsigned char>(c);
    if ((ch < 0x20 && c != '\n' && c != '\t') || ch == 0x7f) shown += fmt::format("\\x{:02x}", ch);
    else shown.push_back(c);
  }
  return secrets::scrub(mark.str() + ": error: " + shown);
}

std::string Mark::str() const {
  if (line <= 0) return file;
  return fmt::format("{}:{}:{}", file, line, col);
}

Mark ComponentSpec::mark_of(const std::string& key) const {
  auto it = key_marks.find(key);
  if (it != key_marks.end()) return it->second;
  // A map named whole ("rdkafka": a plugin that cannot tell which of its entries is at
  // fault, such as librdkafka refusing a login) is only known by its entries: the first
  // of them in the file. Before, such an error pointed at the block's first line, another
  // key (QA: auth errors "at" bootstrap.servers).
  const std::string prefix = key + ".";
  const Mark* first = nullptr;
  for (auto e = key_marks.lower_bound(prefix); e != key_marks.end() && e->first.compare(0, prefix.size(), prefix) == 0; ++e)
    if (e->second.line > 0 && (first == nullptr || e->second.line < first->line ||
                               (e->second.line == first->line && e->second.col < first->col)))
      first = &e->second;
  if (first != nullptr) return *first;
  // A map entry "rdkafka.x" is reported at its own mark if known, else the block.
  return config_mark.line > 0 ? config_mark : mark;
}

std::string ComponentSpec::fingerprint() const {
  // By key: the order keys are written in is not part of the definition (a reformatted
  // or key-sorted file restarted the pipeline). A list's items (one entry each under its
  // key) keep their order: stable.
  auto sorted = values;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out = plugin + "\n" + label + "\n";
  for (auto& [k, v] : sorted) out += k + "=" + v + "\n";
  return out;
}

std::string PipelineSpec::fingerprint() const {
  std::string out = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}\n", name, to_string(delivery),
                                commit_interval_ms, commit_max_records, commit_after_takeover_ms,
                                commit_when_idle, ready_commit_timeout_ms,
                                to_string(error_policy), backoff_initial_ms, backoff_max_ms,
                                max_consecutive_aborts, threads);
  out += source.fingerprint();
  for (auto& t : transforms) out += "T:" + t.fingerprint();
  out += "S:" + sink.fingerprint();
  if (dead_letter) out += "D:" + dead_letter->fingerprint();
  return out;
}

const char* to_string(Delivery d) {
  return d == Delivery::exactly_once ? "exactly_once" : "at_least_once";
}
const char* to_string(ErrorPolicy p) {
  switch (p) {
    case ErrorPolicy::stop: return "stop";
    case ErrorPolicy::skip: return "skip";
    default: return "dead-letter";
  }
}

}  // namespace exactly::config
