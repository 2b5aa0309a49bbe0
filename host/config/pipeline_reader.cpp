#include "config/pipeline_reader.hpp"

#include "config/host_schema.hpp"
#include "config/plugin_checks.hpp"
#include "config/schema_check.hpp"
#include "config/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <thread>
#include <vector>

namespace exactly::config {

namespace {

// A refused name as the user wrote it: UTF-8 shown as text (not byte escapes), control
// characters and bytes that are not UTF-8 as \xNN, and the first character that is not
// allowed named by its code point, since it may be invisible (a zero-width space) or
// look like an allowed one (a Cyrillic 'а').
std::string describe_name(const std::string& name) {
  if (name.empty()) return "an empty name";
  if (name.size() > 200) return fmt::format("{} bytes", name.size());
  std::string shown, first;
  for (size_t i = 0, chars = 1; i < name.size(); ++chars) {
    const auto ch = static_cast<unsigned char>(name[i]);
    size_t len = ch < 0x80 ? 1 : (ch >> 5) == 0x6 ? 2 : (ch >> 4) == 0xe ? 3 : (ch >> 3) == 0x1e ? 4 : 0;
    uint32_t cp = len == 1 ? ch : len == 2 ? (ch & 0x1f) : len == 3 ? (ch & 0x0f) : (ch & 0x07);
    for (size_t k = 1; k < len; ++k) {
      const auto c = i + k < name.size() ? static_cast<unsigned char>(name[i + k]) : 0;
      if ((c & 0xc0) != 0x80) len = 0;
      cp = (cp << 6) | (c & 0x3f);
    }
    const bool allowed = len == 1 && (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.');
    if (len == 0 || cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
      shown += fmt::format("\\x{:02x}", ch);
      if (first.empty()) first = fmt::format("byte 0x{:02x} at character {}", ch, chars);
      i += 1;
      continue;
    }
    if (!allowed && first.empty())
      first = fmt::format("'{}' (U+{:04X}) at character {}", name.substr(i, len), cp, chars);
    shown += name.substr(i, len);
    i += len;
  }
  return fmt::format("'{}': {} is not one of them", shown, first);
}

// A component block: { plugin: NAME, name: LABEL, config: {...} }.
bool read_component(const YAML::Node& node, const Mark& at, ex_component_kind kind,
                    const std::string& where, const std::string& pipeline_context,
                    plugin::Registry& reg, ComponentSpec* out, ErrorSink& ctx) {
  const std::string file = at.file;
  std::string context = pipeline_context + " " + where;
  out->where = where;
  out->mark = at;
  if (!node.IsMap()) {
    ctx.error(at, fmt::format("{}: expects a map with 'plugin' and 'config', got {}", context,
                              node_kind(node)));
    return false;
  }
  YAML::Node config;
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string k = it->first.Scalar();
    Mark km = mark_at(file, it->first.Mark());
    if (k == "plugin") {
      if (!it->second.IsScalar()) {
        ctx.error(km, fmt::format("{}: key 'plugin' expects a component name", context));
        return false;
      }
      out->plugin = it->second.Scalar();
    } else if (k == "name") {
      out->label = it->second.Scalar();
    } else if (k == "config") {
      config = it->second;
      out->config_mark = mark_at(file, it->second.Mark());
      if (!config.IsMap() && !config.IsNull()) {
        ctx.error(out->config_mark,
                  fmt::format("{}: key 'config' expects a map, got {}", context, node_kind(config)));
        return false;
      }
    } else {
      std::string hint = (k == "conf" || k == "configs" || k == "settings")
                             ? " (did you mean 'config'?)"
                             : (k == "plugins" || k == "type" ? " (did you mean 'plugin'?)" : "");
      ctx.error(km, fmt::format("{}: unknown key '{}'{}; a component takes plugin, name, config",
                                context, k, hint));
    }
  }
  if (out->plugin.empty()) {
    ctx.error(at, fmt::format("{}: missing required key 'plugin'", context));
    return false;
  }
  if (out->config_mark.line == 0) out->config_mark = at;
  auto found = reg.find(kind, out->plugin);
  if (found.component == nullptr) {
    auto known = reg.names(kind);
    std::string list;
    for (auto& n : known) list += (list.empty() ? "" : ", ") + n;
    // Control characters in the name are shown as \xNN by Diagnostic::str().
    std::string msg = fmt::format("{}: unknown {} plugin '{}' (known {}s: {})", context,
                                  plugin::kind_name(kind), out->plugin, plugin::kind_name(kind),
                                  list.empty() ? "none" : list);
    if (!reg.failures().empty())
      msg += fmt::format("; {} librar{} or director{} on plugin.path failed to load (first: {}: "
                         "{}), see `exactly plugins`",
                         reg.failures().size(), reg.failures().size() == 1 ? "y" : "ies",
                         reg.failures().size() == 1 ? "y" : "ies", reg.failures()[0].path,
                         reg.failures()[0].reason);
    ctx.error(at, msg);
    return false;
  }
  out->component = found.component;
  out->library = found.library;
  std::vector<Flat> flat;
  if (config && config.IsMap()) flatten(config, "", file, {}, &flat, ctx);
  Checked c = check_fields(flat, found.component->fields,
                           fmt::format("{} ({})", context, out->plugin), out->config_mark, ctx);
  out->values = std::move(c.values);
  out->key_marks = std::move(c.marks);
  return true;
}

}  // namespace

void read_pipeline(const YAML::Node& node, const Mark& at, const std::string& file,
                   plugin::Registry& reg, HostSpec* spec, ErrorSink& ctx, size_t index) {
  if (!node.IsMap()) {
    ctx.error(at, fmt::format("pipelines[{}]: expects a map, got {}", index, node_kind(node)));
    return;
  }
  std::vector<Flat> flat;
  flatten(node, "", file, {"source", "sink", "transforms", "errors.dead-letter"}, &flat, ctx);
  std::string name;
  for (auto& f : flat)
    if (f.key == "name" && f.value.IsScalar()) name = f.value.Scalar();
  // Names label logs, metrics, state and transactional ids: printable, no spaces. A name
  // that is not one is named by its index in every message (a NUL cut them short).
  bool name_ok = !name.empty() && name.size() <= 200;
  for (unsigned char ch : name) name_ok = name_ok && (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.');
  const std::string context = name_ok ? fmt::format("pipeline '{}'", name) : fmt::format("pipelines[{}]", index);
  std::vector<Flat> plain;
  const Flat *source = nullptr, *sink = nullptr, *transforms = nullptr, *dlq = nullptr;
  for (auto& f : flat) {
    if (f.key == "source") source = &f;
    else if (f.key == "sink") sink = &f;
    else if (f.key == "transforms") transforms = &f;
    else if (f.key == "errors.dead-letter") dlq = &f;
    else plain.push_back(f);
  }
  Checked c = check_fields(plain, pipeline_fields(), context, at, ctx);
  for (auto& f : flat) {
    if (f.key != "name" || !f.value.IsScalar()) continue;
    if (!name_ok)
      ctx.error(f.value_mark, fmt::format("{}: key 'name' must be 1-200 letters, digits, '-', '_' "
                                          "or '.' (it names logs, metrics and state), got {}",
                                          context, describe_name(name)));
  }
  PipelineSpec p;
  p.name = name;
  p.file = file;
  p.mark = at;
  if (!name.empty()) {
    for (auto& other : spec->pipelines)
      if (other.name == name) {
        ctx.error(at, fmt::format("duplicate pipeline name '{}' (first defined at {})", name,
                                  other.mark.str()));
        return;
      }
  }
  p.delivery = value_of(c, "delivery") == "exactly_once" ? Delivery::exactly_once
                                                          : Delivery::at_least_once;
  auto num = [&](const char* k, int64_t d) {
    auto v = parse_int(value_of(c, k));
    return v ? *v : d;
  };
  p.commit_interval_ms = num("commit.interval", 1000);
  p.commit_max_records = num("commit.max.records", 100000);
  p.commit_after_takeover_ms = num("commit.after.takeover", 2000);
  p.commit_when_idle = parse_bool(value_of(c, "commit.when.idle")).value_or(true);
  p.ready_commit_timeout_ms = num("ready.commit.timeout", 10000);
  for (const char* k : {"commit.after.takeover", "ready.commit.timeout"})
    if (num(k, 0) < 0)
      ctx.error(c.marks.count(k) ? c.marks[k] : at,
                fmt::format("{}: key '{}' must not be negative", context, k));
  p.threads = num("threads", 0);
  if (p.threads < 0 || p.threads > 256)
    ctx.error(c.marks.count("threads") ? c.marks["threads"] : at,
              fmt::format("{}: key 'threads' must be between 0 (the machine's cores) and 256, got {}",
                          context, p.threads));
  if (p.threads == 0) p.threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  p.max_consecutive_aborts = num("errors.max.consecutive.aborts", 10);
  p.backoff_initial_ms = num("restart.backoff.initial", 1000);
  p.backoff_max_ms = num("restart.backoff.max", 60000);
  std::string pol = value_of(c, "errors.policy");
  p.error_policy = pol == "skip" ? ErrorPolicy::skip
                   : pol == "dead-letter" ? ErrorPolicy::dead_letter
                                          : ErrorPolicy::stop;
  // Zero would spin a core committing empty rounds (or retrying with no pause); zero
  // aborts allowed would rebuild the instance at every abort.
  for (const char* k : {"commit.max.records", "commit.interval", "restart.backoff.initial",
                        "restart.backoff.max", "errors.max.consecutive.aborts"})
    if (num(k, 1) <= 0)
      ctx.error(c.marks.count(k) ? c.marks[k] : at,
                fmt::format("{}: key '{}' must be positive", context, k));
  // The plugins' own checks run only on components whose schema check found nothing:
  // their values are then complete and normalised, as create() would get them.
  auto read_clean = [&](auto&&... args) {
    size_t before = ctx.errors->size();
    return read_component(args...) && ctx.errors->size() == before;
  };
  bool source_clean = false, sink_clean = false, dlq_clean = false;
  std::vector<bool> transforms_clean;
  if (source == nullptr)
    ctx.error(at, fmt::format("{}: missing required key 'source'", context));
  else
    source_clean = read_clean(source->value, source->value_mark, EX_KIND_SOURCE, "source", context,
                              reg, &p.source, ctx);
  if (sink == nullptr)
    ctx.error(at, fmt::format("{}: missing required key 'sink'", context));
  else
    sink_clean = read_clean(sink->value, sink->value_mark, EX_KIND_SINK, "sink", context, reg,
                            &p.sink, ctx);
  if (transforms != nullptr && !transforms->value.IsNull()) {
    if (!transforms->value.IsSequence()) {
      ctx.error(transforms->value_mark, fmt::format("{}: key 'transforms' expects a list, got {}",
                                                    context, node_kind(transforms->value)));
    } else {
      size_t i = 0;
      for (const auto& t : transforms->value) {
        ComponentSpec cs;
        transforms_clean.push_back(read_clean(t, mark_at(file, t.Mark()), EX_KIND_TRANSFORM,
                                              fmt::format("transforms[{}]", i++), context, reg, &cs,
                                              ctx));
        p.transforms.push_back(std::move(cs));
      }
    }
  }
  if (dlq != nullptr) {
    ComponentSpec cs;
    size_t before = ctx.errors->size();
    if (read_component(dlq->value, dlq->value_mark, EX_KIND_SINK, "errors.dead-letter", context,
                       reg, &cs, ctx)) {
      dlq_clean = ctx.errors->size() == before;
      // A sink with a completion window (ABI 1.4: http) settles records after its commit
      // returns, and the host drives that window only for the main sink: as a dead-letter
      // sink, the offsets moved past dead letters still in flight or already failed.
      if (cs.component && cs.component->sink.completed != nullptr) {
        ctx.error(cs.mark, fmt::format("{}: errors.dead-letter: the {} sink finishes its "
                                       "records after the commit (a completion window), so "
                                       "a dead letter it failed to deliver would be lost; use "
                                       "a sink that finishes them in the commit (kafka, file)",
                                       context, cs.plugin));
        dlq_clean = false;
      }
      p.dead_letter = std::move(cs);
    }
  }
  // Only when none is given: a given one that is refused has its own error already.
  if (p.error_policy == ErrorPolicy::dead_letter && !p.dead_letter && dlq == nullptr)
    ctx.error(at, fmt::format("{}: errors.policy is dead-letter but no 'errors.dead-letter' "
                              "sink is configured",
                              context));
  // The pipeline's delivery reaches a sink that declares a 'delivery' key.
  if (p.sink.component && p.sink.component->field("delivery")) {
    bool set = false;
    for (auto& [k, v] : p.sink.values)
      if (k == "delivery") {
        if (v != to_string(p.delivery) && p.sink.key_marks.count("delivery"))
          ctx.error(p.sink.mark_of("delivery"),
                    fmt::format("{}: sink 'delivery' is {}, but the pipeline's delivery is {}; "
                                "set it once, on the pipeline",
                                context, v, to_string(p.delivery)));
        v = to_string(p.delivery);
        set = true;
      }
    if (!set) p.sink.values.emplace_back("delivery", to_string(p.delivery));
    // Not written on the sink: a sink that refuses it names the pipeline's own
    // `delivery:` (or the pipeline), not the sink's first key.
    if (!p.sink.key_marks.count("delivery"))
      p.sink.key_marks["delivery"] = c.marks.count("delivery") ? c.marks["delivery"] : at;
  }
  // A transaction open longer than the sink's transaction.timeout is aborted by the broker
  // (reported by librdkafka as fencing): a round that gathers for commit.interval would
  // never commit under steady input.
  if (p.delivery == Delivery::exactly_once && p.sink.component) {
    if (const auto* f = p.sink.component->field("transaction.timeout")) {
      std::string v = f->has_default ? f->default_value : "";
      for (auto& [k, val] : p.sink.values)
        if (k == "transaction.timeout") v = val;
      auto timeout = parse_duration_ms(v);
      if (timeout && *timeout > 0 && p.commit_interval_ms >= *timeout)
        ctx.error(c.marks.count("commit.interval") ? c.marks["commit.interval"] : at,
                  fmt::format("{}: commit.interval ({} ms) must be shorter than the sink's "
                              "transaction.timeout ({} ms): the broker aborts a transaction "
                              "open longer than that, so no round would commit. Shorten "
                              "commit.interval or raise transaction.timeout (up to the "
                              "broker's transaction.max.timeout.ms)",
                              context, p.commit_interval_ms, *timeout));
    }
  }
  if (p.backoff_initial_ms > p.backoff_max_ms)
    ctx.error(c.marks.count("restart.backoff.initial") ? c.marks["restart.backoff.initial"] : at,
              fmt::format("{}: restart.backoff.initial ({} ms) is above restart.backoff.max ({} ms)",
                          context, p.backoff_initial_ms, p.backoff_max_ms));
  // Last, so that the sink sees the pipeline's delivery as create() will.
  auto plugin_check = [&](const ComponentSpec& cs, bool clean) {
    if (!clean) return;
    for (auto& d : check_with_plugin(cs, name, context + " " + cs.where)) ctx.errors->push_back(std::move(d));
  };
  plugin_check(p.source, source_clean);
  for (size_t i = 0; i < p.transforms.size() && i < transforms_clean.size(); ++i)
    plugin_check(p.transforms[i], transforms_clean[i]);
  plugin_check(p.sink, sink_clean);
  if (p.dead_letter) plugin_check(*p.dead_letter, dlq_clean);
  spec->pipelines.push_back(std::move(p));
}

}  // namespace exactly::config
