#include "engine/supervisor.hpp"

#include "engine/plugin_call.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace exactly::engine {

Supervisor::~Supervisor() {
  request_stop_all();
  join_all();
}

namespace {
// True when the pipelines differ only in component parameters (same plugins, same
// shape, same pipeline settings): a candidate for reconfiguring in place.
bool only_component_params_changed(const config::PipelineSpec& a, const config::PipelineSpec& b) {
  if (a.transforms.size() != b.transforms.size()) return false;
  if (a.source.plugin != b.source.plugin || a.sink.plugin != b.sink.plugin) return false;
  config::PipelineSpec x = b;
  for (size_t i = 0; i < a.transforms.size(); ++i) {
    if (a.transforms[i].plugin != b.transforms[i].plugin) return false;
    x.transforms[i].values = a.transforms[i].values;
  }
  x.source.values = a.source.values;
  x.sink.values = a.sink.values;
  return x.fingerprint() == a.fingerprint();
}

std::string join(const std::vector<std::string>& v) {
  std::string o;
  for (auto& s : v) o += (o.empty() ? "" : ",") + s;
  return o.empty() ? "-" : o;
}
}  // namespace

std::string ApplyReport::str() const {
  return fmt::format("added={} removed={} restarted={} reconfigured={} unchanged={}", join(added),
                     join(removed), join(restarted), join(reconfigured), join(unchanged));
}

ApplyReport Supervisor::apply(const config::HostSpec& spec, const std::function<bool()>& stop_asked) {
  // live_ holds moved-from entries until the end: no summary from another thread meanwhile.
  std::lock_guard<std::timed_mutex> lists(lists_mu_);
  ApplyReport rep;
  auto asked = [&] {
    if (!rep.interrupted && stop_asked && stop_asked()) rep.interrupted = true;
    return rep.interrupted;
  };
  std::map<std::string, const config::PipelineSpec*> next;
  for (auto& p : spec.pipelines) next[p.name] = &p;

  // Waits for the pipeline to take the new parameters at its next round boundary; a
  // stop asked meanwhile ends the wait (the pipeline is then stopped with the others).
  auto reconfigured_in_place = [&](Pipeline& p, const config::PipelineSpec& to) {
    auto fut = p.request_reconfigure(to);
    // A round boundary comes within commit.interval unless a call hangs; the wait is also
    // bounded by shutdown.timeout, which an operator sets to say how long a reload may take.
    const int64_t until =
        steady_ms() + std::min<int64_t>(p.spec().commit_interval_ms + 10000, spec.shutdown_timeout_ms);
    while (fut.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready &&
           steady_ms() < until && !asked()) {
    }
    p.withdraw_reconfigure();
    return fut.get();
  };

  // Drain everything that goes away or changes first, in parallel, then start.
  std::vector<std::unique_ptr<Pipeline>> keep, draining;
  std::vector<const config::PipelineSpec*> to_start;
  std::set<std::string> live_names;
  for (auto& p : live_) {
    live_names.insert(p->spec().name);
    auto it = next.find(p->spec().name);
    if (it == next.end()) {
      rep.removed.push_back(p->spec().name);
      p->request_stop();
      draining.push_back(std::move(p));
    } else if (it->second->fingerprint() != p->spec().fingerprint() &&
               only_component_params_changed(p->spec(), *it->second) && !p->done() && !asked() &&
               reconfigured_in_place(*p, *it->second)) {
      rep.reconfigured.push_back(p->spec().name);
      keep.push_back(std::move(p));
    } else if (!asked() && (it->second->fingerprint() != p->spec().fingerprint() ||
                            p->state() == State::failed)) {
      // A failed pipeline is retried on every valid reload, changed or not: the
      // operator may have fixed what it depends on (a topic, a directory).
      rep.restarted.push_back(p->spec().name);
      p->request_stop();
      draining.push_back(std::move(p));
      to_start.push_back(it->second);
    } else {
      rep.unchanged.push_back(p->spec().name);
      keep.push_back(std::move(p));
    }
  }
  for (auto& p : spec.pipelines)
    if (!live_names.count(p.name)) {
      rep.added.push_back(p.name);
      to_start.push_back(&p);
    }
  // A plugin call that never returns must not hang the reload (and, with it, signal
  // handling) forever: past shutdown.timeout, report what is stuck and exit.
  const int64_t deadline = steady_ms() + spec.shutdown_timeout_ms;
  auto stop_everything = [&] {
    for (auto& p : keep) p->request_stop();
    for (auto& p : draining) p->request_stop();
  };
  bool stopped_all = false;
  for (auto& p : draining) {
    while (!p->done() && steady_ms() < deadline) {
      if (asked() && !std::exchange(stopped_all, true)) stop_everything();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!p->done()) {
      log::error("reload", "pipeline '{}' did not stop within shutdown.timeout ({} s); still running:\n{}"
                 "exiting with code 3 (its round is replayed on the next start)",
                 p->spec().name, spec.shutdown_timeout_ms / 1000.0,
                 describe(calls_running_longer_than(0)));
      std::_Exit(3);
    }
    p->join();
    metrics::global().set("pipeline_up", {{"pipeline", p->spec().name}}, 0);
    retired_.push_back(std::move(p));
  }
  if (asked() && !stopped_all) stop_everything();
  // Series of pipelines that are gone for good would otherwise live forever.
  for (auto& name : rep.removed) {
    // Kept for the summary, which would otherwise show their rows without a counter.
    auto series = metrics::global().series_with("pipeline", name);
    auto& kept = gone_counters_[name];
    kept.insert(kept.end(), series.begin(), series.end());
    metrics::global().remove_matching("pipeline", name);
  }
  // Retired instances hold their plugin libraries; keep only the recent ones for the
  // summary so a long reload history does not pin every library ever loaded.
  constexpr size_t kKeepRetired = 16;
  {
    std::vector<Pipeline*> now;  // the drained ones are done: before retired_ lets them go
    for (auto& p : keep) now.push_back(p.get());
    publish_stoppable(now);
  }
  if (retired_.size() > kKeepRetired)
    retired_.erase(retired_.begin(), retired_.end() - kKeepRetired);
  live_ = std::move(keep);
  if (rep.interrupted) return rep;
  for (auto* ps : to_start) {
    auto p = std::make_unique<Pipeline>(*ps);
    p->start();
    add_stoppable(p.get());
    live_.push_back(std::move(p));
  }
  return rep;
}

void Supervisor::request_stop_all() {
  for (auto& p : live_) p->request_stop();
}

void Supervisor::request_stop_all_from_any_thread() {
  std::lock_guard<std::mutex> g(stop_mu_);
  stop_all_ = true;
  for (auto* p : stoppable_) p->request_stop();
}

void Supervisor::publish_stoppable(const std::vector<Pipeline*>& now) {
  std::lock_guard<std::mutex> g(stop_mu_);
  stoppable_ = now;
}

void Supervisor::add_stoppable(Pipeline* p) {
  std::lock_guard<std::mutex> g(stop_mu_);
  stoppable_.push_back(p);
  if (stop_all_) p->request_stop();
}

void Supervisor::join_all() {
  for (auto& p : live_) p->join();
}

bool Supervisor::any_running() const {
  return std::any_of(live_.begin(), live_.end(), [](auto& p) { return !p->ended(); });
}

bool Supervisor::any_failed() const {
  return std::any_of(live_.begin(), live_.end(),
                     [](auto& p) { return p->state() == State::failed; });
}

std::vector<const Pipeline*> Supervisor::all() const {
  std::vector<const Pipeline*> out;
  for (auto& p : retired_) out.push_back(p.get());
  for (auto& p : live_) out.push_back(p.get());
  return out;
}

const Pipeline* Supervisor::find(const std::string& name) const {
  for (auto& p : live_)
    if (p->spec().name == name) return p.get();
  return nullptr;
}

std::string Supervisor::summary() const { return render_summary(all(), gone_counters_); }

std::optional<std::string> Supervisor::summary_from_any_thread() const {
  std::unique_lock<std::timed_mutex> lists(lists_mu_, std::defer_lock);
  if (!lists.try_lock_for(std::chrono::milliseconds(200))) return std::nullopt;
  return summary();
}

std::string render_summary(const std::vector<const Pipeline*>& pipelines, const GoneCounters& gone) {
  // The host's own families: the row's columns, or /metrics only (a stage's CPU, for
  // dashboards). stage_timeouts_total and the tasks' batches are shown.
  static const std::set<std::string> host_families = {
      "records_in_total", "records_out_total", "records_rejected_total", "commits_total",
      "aborts_total",     "restarts_total",    "pipeline_up",            "stage_cpu_seconds_total",
      "pipeline_aborts_in_a_row"};
  // One row per pipeline name: instances replaced by reloads are summed into it (and the
  // plugin counters, labelled by pipeline only, are shown once).
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Pipeline*>> by_name;
  for (auto* p : pipelines) {
    auto& v = by_name[p->spec().name];
    if (v.empty()) order.push_back(p->spec().name);
    v.push_back(p);
  }
  std::string o = fmt::format("{:<22} {:<9} {:>10} {:>10} {:>9} {:>9} {:>8} {:>7} {:>9} {:>12}\n",
                              "pipeline", "state", "in", "out", "dropped", "rejected", "commits",
                              "aborts", "elapsed", "rate");
  for (const auto& name : order) {
    const auto& instances = by_name[name];
    const Pipeline* newest = instances.back();
    uint64_t in = 0, out = 0, rej = 0, replayed = 0, commits = 0, aborts = 0, restarts = 0;
    double el = 0, active = 0, first = -1, last = -1;
    for (auto* p : instances) {
      auto& s = p->stats();
      in += s.records_in;
      out += s.records_out;
      rej += s.rejected;
      replayed += s.replayed;
      commits += s.commits;
      aborts += s.aborts;
      restarts += s.restarts;
      el += p->elapsed_seconds();
      const int64_t f = s.first_record_us.load(), l = s.last_commit_us.load();
      if (f >= 0 && l >= f) {
        active += (l - f) / 1e6;
        first = f / 1e6;
        last = l / 1e6;
      }
    }
    // Records per second of the active span; the whole run's when none was measured.
    const double span = active > 0 ? active : el;
    // Committed rounds only: records a stage removed (filter, dedupe), not replays.
    uint64_t dropped = in >= out + rej ? in - out - rej : 0;
    o += fmt::format("{:<22} {:<9} {:>10} {:>10} {:>9} {:>9} {:>8} {:>7} {:>8.2f}s {:>8.0f} r/s\n",
                     name, to_string(newest->state()), in, out, dropped, rej, commits, aborts, el,
                     span > 0 ? in / span : 0.0);
    // A second or more outside it (a group join, an idle wait before a bounded run ends):
    // say so, or the rate and the elapsed time look like they disagree.
    if (active > 0 && el - active >= 1.0) {
      if (instances.size() == 1)
        o += fmt::format("    active: {:.2f}s, from the first record at {:.2f}s to the last commit "
                         "with records at {:.2f}s (the rate is over this span)\n",
                         active, first, last);
      else
        o += fmt::format("    active: {:.2f}s over {} instances (the rate is over this span)\n",
                         active, instances.size());
    }
    // Plugin counters, summed over their other labels (partitions) but per stage: a
    // dead-letter sink's counts are not the main sink's.
    std::map<std::pair<std::string, std::string>, double> totals;
    std::map<std::string, std::set<std::string>> stages_of;
    auto series = metrics::global().series_with("pipeline", name);
    if (auto g = gone.find(name); g != gone.end()) series.insert(series.end(), g->second.begin(), g->second.end());
    for (auto& ser : series)
      if (!host_families.count(ser.name) && ser.name.size() > 6 &&
          ser.name.compare(ser.name.size() - 6, 6, "_total") == 0) {
        std::string stage = metrics::Registry::label_value(ser.labels, "stage");
        totals[{ser.name, stage}] += ser.value;
        stages_of[ser.name].insert(stage);
      }
    for (auto& [key, v] : totals) {
      const auto& [metric, stage] = key;
      const bool several = stages_of[metric].size() > 1;
      // Counts as integers; a plugin's fractional counter (seconds) to the millisecond.
      const std::string shown = v == std::floor(v) && std::fabs(v) < 1e15 ? fmt::format("{:.0f}", v)
                                                                          : fmt::format("{:.3f}", v);
      o += fmt::format("    {:<44} {:>12}\n", several ? metric + " (" + stage + ")" : metric, shown);
    }
    // Read again by a later round, or, when the pipeline then stopped or failed, by the
    // next start: which one the counter cannot tell.
    if (replayed)
      o += fmt::format("    replayed: {} (records of aborted rounds, read again by a later round or the "
                       "next start)\n", replayed);
    if (instances.size() > 1) o += fmt::format("    instances: {} (replaced by reloads)\n", instances.size());
    if (restarts) o += fmt::format("    restarts: {}\n", restarts);
    if (newest->state() == State::failed) o += fmt::format("    error: {}\n", newest->error());
  }
  return o;
}

}  // namespace exactly::engine
