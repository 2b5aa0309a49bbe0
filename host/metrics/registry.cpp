#include "metrics/registry.hpp"

#include <fmt/format.h>

#include <cmath>

namespace exactly::metrics {

Registry& global() {
  static Registry r;
  return r;
}

const std::vector<double>& latency_buckets() {
  static const std::vector<double> b = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                        0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  return b;
}

namespace {
std::string escape(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\') o += "\\\\";
    else if (c == '"') o += "\\\"";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}
// As Prometheus' text parser reads them: printf's "-nan" made it refuse the whole page.
std::string fmt_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{}", v);
}
}  // namespace

std::string Registry::render_labels(const Labels& labels) {
  std::string o;
  for (auto& [k, v] : labels) o += (o.empty() ? "" : ",") + k + "=\"" + escape(v) + "\"";
  return o;
}

Registry::Labels Registry::parse_labels(const std::string& s) {
  Labels out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    std::string kv = s.substr(pos, comma - pos);
    size_t eq = kv.find('=');
    if (eq != std::string::npos && eq > 0) out.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    pos = comma + 1;
  }
  return out;
}

namespace {
bool name_chars(const std::string& s, bool colons) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (colons && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}
}  // namespace

bool Registry::valid_name(const std::string& s) { return name_chars(s, true); }
bool Registry::valid_label_name(const std::string& s) { return name_chars(s, false); }

Registry::Family& Registry::family(const std::string& name, Type dflt) {
  auto it = families_.find(name);
  if (it == families_.end()) {
    Family f;
    f.type = dflt;
    it = families_.emplace(name, std::move(f)).first;
  }
  return it->second;
}

void Registry::describe(const std::string& name, Type type, const std::string& help) {
  std::lock_guard<std::mutex> g(mu_);
  auto& f = family(name, type);
  f.type = type;
  f.help = help;
}

void Registry::add(const std::string& name, const Labels& labels, double v) {
  std::lock_guard<std::mutex> g(mu_);
  family(name, Type::counter).values[render_labels(labels)] += v;
}

void Registry::set(const std::string& name, const Labels& labels, double v) {
  std::lock_guard<std::mutex> g(mu_);
  family(name, Type::gauge).values[render_labels(labels)] = v;
}

void Registry::observe(const std::string& name, const Labels& labels, double v) {
  std::lock_guard<std::mutex> g(mu_);
  auto& h = family(name, Type::histogram).histograms[render_labels(labels)];
  const auto& b = latency_buckets();
  if (h.counts.empty()) h.counts.assign(b.size(), 0);
  for (size_t i = 0; i < b.size(); ++i)
    if (v <= b[i]) {
      h.counts[i] += 1;
      break;
    }
  h.sum += v;
  h.count += 1;
}

std::vector<Registry::Series> Registry::series_of(const std::string& name) const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<Series> out;
  auto it = families_.find(name);
  if (it == families_.end()) return out;
  for (const auto& [labels, v] : it->second.values) out.push_back({name, labels, v});
  return out;
}

double Registry::get(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0;
  auto v = it->second.values.find(render_labels(labels));
  return v == it->second.values.end() ? 0 : v->second;
}

double Registry::sum(const std::string& name, const Labels& match) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0;
  double total = 0;
  for (auto& [labels, v] : it->second.values) {
    bool ok = true;
    for (auto& [k, val] : match)
      if (labels.find(k + "=\"" + escape(val) + "\"") == std::string::npos) ok = false;
    if (ok) total += v;
  }
  return total;
}

void Registry::remove_matching(const std::string& k, const std::string& v) {
  std::lock_guard<std::mutex> g(mu_);
  std::string needle = k + "=\"" + escape(v) + "\"";
  for (auto& [name, f] : families_) {
    for (auto it = f.values.begin(); it != f.values.end();)
      it = it->first.find(needle) != std::string::npos ? f.values.erase(it) : std::next(it);
    for (auto it = f.histograms.begin(); it != f.histograms.end();)
      it = it->first.find(needle) != std::string::npos ? f.histograms.erase(it) : std::next(it);
  }
}

std::string Registry::label_value(const std::string& rendered, const std::string& key) {
  const std::string needle = key + "=\"";
  size_t at = rendered.find(needle);
  while (at != std::string::npos && at > 0 && rendered[at - 1] != ',') at = rendered.find(needle, at + 1);
  if (at == std::string::npos) return {};
  std::string v;
  for (size_t i = at + needle.size(); i < rendered.size() && rendered[i] != '"'; ++i) {
    if (rendered[i] == '\\' && i + 1 < rendered.size()) {
      ++i;
      v += rendered[i] == 'n' ? '\n' : rendered[i];
    } else {
      v += rendered[i];
    }
  }
  return v;
}

void Registry::remove_gauges_matching(const Labels& match, const std::string& having) {
  std::lock_guard<std::mutex> g(mu_);
  auto matches = [&](const std::string& rendered) {
    for (auto& [k, v] : match)
      if (rendered.find(k + "=\"") == std::string::npos || label_value(rendered, k) != v) return false;
    return having.empty() || rendered.rfind(having + "=\"", 0) == 0 ||
           rendered.find("," + having + "=\"") != std::string::npos;
  };
  for (auto& [name, f] : families_) {
    if (f.type != Type::gauge) continue;
    for (auto it = f.values.begin(); it != f.values.end();)
      it = matches(it->first) ? f.values.erase(it) : std::next(it);
  }
}

std::vector<Registry::Series> Registry::series_with(const std::string& k,
                                                   const std::string& v) const {
  std::lock_guard<std::mutex> g(mu_);
  std::string needle = k + "=\"" + escape(v) + "\"";
  std::vector<Series> out;
  for (auto& [name, f] : families_)
    for (auto& [labels, val] : f.values)
      if (labels.find(needle) != std::string::npos) out.push_back({name, labels, val});
  return out;
}

std::string Registry::exposition() const {
  std::lock_guard<std::mutex> g(mu_);
  std::string o;
  for (auto& [name, f] : families_) {
    std::string full = "exactly_" + name;
    if (f.values.empty() && f.histograms.empty()) continue;
    if (!f.help.empty()) o += fmt::format("# HELP {} {}\n", full, f.help);
    const char* t = f.type == Type::counter ? "counter" : f.type == Type::gauge ? "gauge" : "histogram";
    o += fmt::format("# TYPE {} {}\n", full, t);
    for (auto& [labels, v] : f.values)
      o += labels.empty() ? fmt::format("{} {}\n", full, fmt_value(v))
                          : fmt::format("{}{{{}}} {}\n", full, labels, fmt_value(v));
    const auto& b = latency_buckets();
    for (auto& [labels, h] : f.histograms) {
      std::string sep = labels.empty() ? "" : labels + ",";
      double cum = 0;
      for (size_t i = 0; i < b.size(); ++i) {
        cum += h.counts[i];
        o += fmt::format("{}_bucket{{{}le=\"{}\"}} {}\n", full, sep, fmt_value(b[i]), fmt_value(cum));
      }
      o += fmt::format("{}_bucket{{{}le=\"+Inf\"}} {}\n", full, sep, fmt_value(h.count));
      std::string lb = labels.empty() ? "" : "{" + labels + "}";
      o += fmt::format("{}_sum{} {}\n", full, lb, fmt_value(h.sum));
      o += fmt::format("{}_count{} {}\n", full, lb, fmt_value(h.count));
    }
  }
  return o;
}

}  // namespace exactly::metrics
