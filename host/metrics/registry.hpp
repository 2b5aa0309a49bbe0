#pragma once
// Process-wide metrics in the Prometheus text exposition format. Small on purpose:
// counters, gauges and fixed-bucket histograms keyed by name + label set.
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace exactly::metrics {

enum class Type { counter, gauge, histogram };

class Registry {
 public:
  // `labels` is a list of k=v pairs; values are escaped here.
  using Labels = std::vector<std::pair<std::string, std::string>>;

  void describe(const std::string& name, Type type, const std::string& help);
  void add(const std::string& name, const Labels& labels, double v);
  void set(const std::string& name, const Labels& labels, double v);
  void observe(const std::string& name, const Labels& labels, double v);
  double get(const std::string& name, const Labels& labels) const;
  // Sum over all series of a family whose labels include `match`.
  double sum(const std::string& name, const Labels& match) const;
  // Drops every series carrying label k=v (a pipeline removed on reload).
  void remove_matching(const std::string& k, const std::string& v);
  // Drops the gauges whose labels include every pair of `match` (a revoked partition's:
  // a gauge that nobody sets any more would report its last value for ever). Counters
  // stay: they count what happened.
  // With `having`, only those that also carry that label, whatever its value (a stage's
  // gauges, which the plugins set, and not the host's own).
  void remove_gauges_matching(const Labels& match, const std::string& having = "");
  std::string exposition() const;
  // Every plain series (counters and gauges) carrying label k=v: (name, labels, value).
  struct Series {
    std::string name, labels;
    double value;
  };
  std::vector<Series> series_with(const std::string& k, const std::string& v) const;
  // Every plain series of family `name` (labels rendered), in label order.
  std::vector<Series> series_of(const std::string& name) const;

  static std::string render_labels(const Labels& labels);
  // The value of label `key` in labels rendered by render_labels (`a="x",b="y"`),
  // unescaped, or "" when it has none.
  static std::string label_value(const std::string& rendered, const std::string& key);
  // Parses "k=v,k2=v2" from plugins.
  static Labels parse_labels(const std::string& s);
  // Prometheus' rules: [a-zA-Z_:][a-zA-Z0-9_:]* for names, [a-zA-Z_][a-zA-Z0-9_]* for
  // label names. One series that breaks them makes a scraper refuse the whole page.
  static bool valid_name(const std::string& s);
  static bool valid_label_name(const std::string& s);

 private:
  struct Histogram {
    std::vector<double> counts;  // per bucket, cumulative at render time
    double sum = 0;
    double count = 0;
  };
  struct Family {
    Type type = Type::gauge;
    std::string help;
    std::map<std::string, double> values;         // rendered labels -> value
    std::map<std::string, Histogram> histograms;  // rendered labels -> histogram
  };
  Family& family(const std::string& name, Type dflt);
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

Registry& global();
const std::vector<double>& latency_buckets();

}  // namespace exactly::metrics
