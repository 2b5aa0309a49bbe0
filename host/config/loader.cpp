#include "config/loader.hpp"

#include <cstring>

#include "config/interpolate.hpp"
#include "config/plugin_checks.hpp"
#include "config/units.hpp"
#include "util/secrets.hpp"
#include "config/yaml_guard.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <thread>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <fmt/format.h>
#include <map>
#include <set>
#include <tuple>

namespace exactly::config {
namespace fs = std::filesystem;
using plugin::Field;

namespace {

bool read_text(const std::string& file, std::string& out) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  // Bounded: one byte more than allowed is enough to say it is too big.
  out.assign(kMaxConfigBytes + 1, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(in.gcount()));
  return !in.bad();
}

// "PORT", ":PORT" or "HOST:PORT" (what the metrics server accepts); "" when fine.
std::string listen_problem(const std::string& v) {
  if (v.empty()) return "empty: give address:port (e.g. 127.0.0.1:9464), or remove the key for no metrics";
  size_t colon = v.rfind(':');
  std::string host = colon == std::string::npos ? "" : v.substr(0, colon);
  std::string port = colon == std::string::npos ? v : v.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    return "expected address:port with a port number, e.g. 127.0.0.1:9464";
  if (std::stoi(port) > 65535) return "port " + port + " is out of range (0-65535)";
  for (char ch : host)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != ':' &&
        ch != '[' && ch != ']')
      return "the address part '" + host + "' is not a host name or IP address";
  return "";
}

Mark mark_at(const std::string& file, const YAML::Mark& m) {
  if (m.is_null()) return Mark{file, 0, 0};
  return Mark{file, m.line + 1, m.column + 1};
}

// One leaf of a flattened YAML map: "retention.max.keys" -> node.
struct Flat {
  std::string key;
  YAML::Node value;
  Mark key_mark;
  Mark value_mark;
};

class Ctx {
 public:
  std::vector<Diagnostic>* errors;
  void error(const Mark& m, std::string msg) { errors->push_back({m, std::move(msg)}); }
};

const char* node_kind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "nothing";
    default: return "a scalar";
  }
}

// Flattens nested maps into dotted keys. Keys in `stop` are kept whole (their value
// is handed back as a node: sub-components, lists of transforms).
// A scalar's (or a list's scalars') ${...} references resolved (interpolate.hpp); values
// of secret-named keys and values read from files are remembered as secrets.
std::string resolve_scalar(const std::string& text, const std::string& key, const Mark& at, Ctx& ctx) {
  Interpolated r = interpolate(text);
  if (!r.error.empty()) {
    ctx.error(at, fmt::format("key '{}': {}", key, r.error));
    return text;
  }
  if (r.from_file || secrets::key_is_secret(key)) secrets::add(r.value);
  return r.value;
}

YAML::Node resolve(const YAML::Node& v, const std::string& key, const Mark& at, Ctx& ctx) {
  if (v.IsScalar()) {
    std::string s = resolve_scalar(v.Scalar(), key, at, ctx);
    if (s == v.Scalar()) return v;
    YAML::Node n(s);
    return n;
  }
  if (v.IsSequence()) {
    bool any = false;
    YAML::Node n(YAML::NodeType::Sequence);
    for (const auto& item : v) {
      if (!item.IsScalar()) {
        n.push_back(item);
        continue;
      }
      std::string s = resolve_scalar(item.Scalar(), key, at, ctx);
      any = any || s != item.Scalar();
      n.push_back(YAML::Node(s));
    }
    return any ? n : v;
  }
  return v;
}

void flatten(const YAML::Node& map, const std::string& prefix, const std::string& file,
             const std::set<std::string>& stop, std::vector<Flat>* out, Ctx& ctx) {
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    Mark km = mark_at(file, it->first.Mark());
    if (!it->first.IsScalar()) {
      ctx.error(km, "keys must be plain text");
      continue;
    }
    std::string key = prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
    if (!seen.insert(it->first.Scalar()).second) {
      ctx.error(km, fmt::format("duplicate key '{}'", key));
      continue;
    }
    // A copy (a Node is a handle): `it->` yields a proxy that dies with the statement, so a
    // reference to its member dangles (ASan: stack-use-after-scope, found by fuzz_config_load).
    const YAML::Node v = it->second;
    if (v.IsMap() && v.size() > 0 && !stop.count(key)) {
      flatten(v, key, file, stop, out, ctx);
    } else {
      Mark vm = mark_at(file, v.Mark());
      out->push_back(Flat{key, resolve(v, key, vm, ctx), km, vm});
    }
  }
}

std::string suggestion(const std::string& key, const std::vector<Field>& fields) {
  std::string best;
  size_t best_d = std::max<size_t>(2, key.size() / 4) + 1;
  for (auto& f : fields) {
    size_t d = edit_distance(key, f.key);
    if (d < best_d) {
      best_d = d;
      best = f.key;
    }
  }
  return best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
}

std::string type_name(ex_config_type t) {
  switch (t) {
    case EX_CFG_STRING: return "a string";
    case EX_CFG_INT: return "an integer";
    case EX_CFG_DOUBLE: return "a number";
    case EX_CFG_BOOL: return "true or false";
    case EX_CFG_LIST: return "a list";
    case EX_CFG_DURATION: return "a duration such as 500ms, 5s, 2m, 1h";
    case EX_CFG_SIZE: return "a size such as 512, 64KiB, 16MiB, 1GiB";
    case EX_CFG_MAP: return "a map";
  }
  return "a value";
}

// Normalises one scalar for a field; returns nullopt after reporting.
std::optional<std::string> normalise(const Field& f, const std::string& raw, const Mark& m,
                                     const std::string& context, Ctx& ctx) {
  auto bad = [&]() -> std::optional<std::string> {
    ctx.error(m, fmt::format("{}: key '{}' expects {}, got '{}'", context, f.key,
                             type_name(f.type), raw));
    return std::nullopt;
  };
  std::string out = raw;
  switch (f.type) {
    case EX_CFG_INT:
      if (!parse_int(raw)) return bad();
      out = std::to_string(*parse_int(raw));
      break;
    case EX_CFG_DOUBLE:
      if (!parse_double(raw)) return bad();
      break;
    case EX_CFG_BOOL:
      if (!parse_bool(raw)) return bad();
      out = *parse_bool(raw) ? "true" : "false";
      break;
    case EX_CFG_DURATION:
      if (!parse_duration_ms(raw)) return bad();
      out = std::to_string(*parse_duration_ms(raw));
      break;
    case EX_CFG_SIZE:
      if (!parse_size_bytes(raw)) return bad();
      out = std::to_string(*parse_size_bytes(raw));
      break;
    default:
      break;
  }
  if (!f.allowed.empty() &&
      std::find(f.allowed.begin(), f.allowed.end(), out) == f.allowed.end()) {
    std::string list;
    for (auto& a : f.allowed) list += (list.empty() ? "" : ", ") + a;
    ctx.error(m, fmt::format("{}: key '{}' must be one of: {}; got '{}'", context, f.key, list,
                             raw));
    return std::nullopt;
  }
  return out;
}

struct Checked {
  std::vector<std::pair<std::string, std::string>> values;
  std::map<std::string, Mark> marks;
};

// Checks flattened values against a schema: unknown, wrongly typed and missing keys.
Checked check_fields(const std::vector<Flat>& flat, const std::vector<Field>& fields,
                     const std::string& context, const Mark& block, Ctx& ctx) {
  Checked c;
  std::set<std::string> given;
  for (auto& fv : flat) {
    const Field* f = nullptr;
    std::string map_sub;
    for (auto& cand : fields)
      if (cand.key == fv.key) f = &cand;
    if (f == nullptr)
      for (auto& cand : fields)
        if (cand.type == EX_CFG_MAP && fv.key.rfind(cand.key + ".", 0) == 0) f = &cand;
    if (f == nullptr) {
      ctx.error(fv.key_mark,
                fmt::format("{}: unknown key '{}'{}", context, fv.key, suggestion(fv.key, fields)));
      continue;
    }
    given.insert(f->key);
    c.marks[fv.key] = fv.value_mark.line > 0 ? fv.value_mark : fv.key_mark;
    if (fv.value.IsNull()) {
      ctx.error(fv.key_mark, fmt::format("{}: key '{}' has no value", context, fv.key));
      continue;
    }
    if (f->type == EX_CFG_MAP) {
      if (fv.key == f->key && !(fv.value.IsMap() && fv.value.size() == 0)) {
        ctx.error(fv.value_mark, fmt::format("{}: key '{}' expects a map, got {}", context,
                                             fv.key, node_kind(fv.value)));
        continue;
      }
      if (fv.value.IsScalar()) c.values.emplace_back(fv.key, fv.value.Scalar());
      else if (!fv.value.IsMap())
        ctx.error(fv.value_mark, fmt::format("{}: key '{}' expects a plain value, got {}",
                                             context, fv.key, node_kind(fv.value)));
      continue;
    }
    if (f->type == EX_CFG_LIST) {
      if (fv.value.IsSequence()) {
        for (const auto& item : fv.value) {
          if (!item.IsScalar()) {
            ctx.error(mark_at(block.file, item.Mark()),
                      fmt::format("{}: key '{}' expects a list of plain values, got {} inside",
                                  context, fv.key, node_kind(item)));
            continue;
          }
          c.values.emplace_back(fv.key, item.Scalar());
        }
      } else if (fv.value.IsScalar()) {
        // A single value or "a,b,c" is a list too, as in Kafka's own configs.
        std::string s = fv.value.Scalar();
        size_t pos = 0;
        while (pos <= s.size()) {
          size_t comma = s.find(',', pos);
          if (comma == std::string::npos) comma = s.size();
          std::string item = s.substr(pos, comma - pos);
          item.erase(0, item.find_first_not_of(' '));
          item.erase(item.find_last_not_of(' ') + 1);
          if (!item.empty()) c.values.emplace_back(fv.key, item);
          pos = comma + 1;
        }
      } else {
        ctx.error(fv.value_mark, fmt::format("{}: key '{}' expects a list, got {}", context,
                                             fv.key, node_kind(fv.value)));
      }
      continue;
    }
    if (!fv.value.IsScalar()) {
      ctx.error(fv.value_mark, fmt::format("{}: key '{}' expects {}, got {}", context, fv.key,
                                           type_name(f->type), node_kind(fv.value)));
      continue;
    }
    if (auto v = normalise(*f, fv.value.Scalar(), fv.value_mark, context, ctx))
      c.values.emplace_back(fv.key, *v);
  }
  for (auto& f : fields) {
    if (given.count(f.key)) continue;
    if (f.required) {
      ctx.error(block, fmt::format("{}: missing required key '{}' ({})", context, f.key,
                                   f.doc.empty() ? type_name(f.type) : f.doc));
    } else if (f.has_default && f.type != EX_CFG_MAP) {
      if (f.type == EX_CFG_LIST) {
        if (!f.default_value.empty()) c.values.emplace_back(f.key, f.default_value);
      } else if (auto v = normalise(f, f.default_value, block, context + " (default)", ctx)) {
        c.values.emplace_back(f.key, *v);
      }
    }
  }
  return c;
}

Field fld(const char* key, ex_config_type t, const char* dflt, const char* doc,
          std::vector<std::string> allowed = {}, bool required = false) {
  Field f;
  f.key = key;
  f.type = t;
  f.required = required;
  f.has_default = dflt != nullptr;
  if (dflt) f.default_value = dflt;
  f.doc = doc;
  f.allowed = std::move(allowed);
  return f;
}

}  // namespace

// The host's own schema for a pipeline entry (sub-components are handled apart).
const std::vector<Field>& pipeline_fields() {
  static const std::vector<Field> f = {
      fld("name", EX_CFG_STRING, nullptr, "unique pipeline name", {}, true),
      fld("delivery", EX_CFG_STRING, "at_least_once", "delivery guarantee",
          {"at_least_once", "exactly_once"}),
      fld("commit.interval", EX_CFG_DURATION, "1s", "longest time between commits"),
      fld("commit.max.records", EX_CFG_INT, "100000", "records that close a round early"),
      fld("commit.after.takeover", EX_CFG_DURATION, "2s",
          "for this long after the source is given partitions (other than at start) or resumes "
          "a held one, every batch commits at once, so a takeover's first output is not held "
          "back for commit.interval; 0 = off"),
      fld("threads", EX_CFG_INT, "0",
          "tasks the pipeline's partitions are split into, each running its own instances of "
          "the transforms on its own thread (a partition always stays in one task, so its order "
          "is kept; the sink and the commit stay one); 0 = the machine's cores"),
      fld("errors.policy", EX_CFG_STRING, "stop", "what a record error does",
          {"stop", "skip", "dead-letter"}),
      fld("errors.max.consecutive.aborts", EX_CFG_INT, "10",
          "aborted rounds in a row before the pipeline is rebuilt"),
      fld("restart.backoff.initial", EX_CFG_DURATION, "1s", "first restart delay"),
      fld("restart.backoff.max", EX_CFG_DURATION, "60s", "longest restart delay"),
      // Sub-components: validated separately, listed so unknown-key hints know them.
      fld("source", EX_CFG_MAP, nullptr, "source component"),
      fld("transforms", EX_CFG_LIST, nullptr, "transform components"),
      fld("sink", EX_CFG_MAP, nullptr, "sink component"),
      fld("errors.dead-letter", EX_CFG_MAP, nullptr, "dead-letter sink component"),
  };
  return f;
}

const std::vector<Field>& file_fields() {
  static const std::vector<Field> f = {
      fld("plugin.path", EX_CFG_LIST, nullptr, "directories with plugin libraries"),
      fld("metrics.listen", EX_CFG_STRING, nullptr, "address:port for Prometheus metrics"),
      fld("plugin.insecure", EX_CFG_BOOL, "false",
          "load plugins from directories or files that other users can write (refused by default)"),
      fld("stage.timeout", EX_CFG_DURATION, "60s",
          "report (log and metric, naming pipeline, stage, call and record) a plugin call "
          "that has not returned after this long; 0 = never"),
      fld("shutdown.timeout", EX_CFG_DURATION, "60s",
          "how long pipelines may take to stop after a signal or when a reload replaces "
          "them; past it the host prints the calls still running and exits with code 3"),
      fld("pipelines", EX_CFG_LIST, nullptr, "pipeline definitions"),
  };
  return f;
}

namespace {

std::string value_of(const Checked& c, const std::string& key) {
  for (auto& [k, v] : c.values)
    if (k == key) return v;
  return {};
}

// A component block: { plugin: NAME, name: LABEL, config: {...} }.
bool read_component(const YAML::Node& node, const Mark& at, ex_component_kind kind,
                    const std::string& where, const std::string& pipeline,
                    plugin::Registry& reg, ComponentSpec* out, Ctx& ctx) {
  const std::string file = at.file;
  std::string context = fmt::format("pipeline '{}' {}", pipeline, where);
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

void read_pipeline(const YAML::Node& node, const Mark& at, const std::string& file,
                   plugin::Registry& reg, HostSpec* spec, Ctx& ctx, size_t index) {
  if (!node.IsMap()) {
    ctx.error(at, fmt::format("pipelines[{}]: expects a map, got {}", index, node_kind(node)));
    return;
  }
  std::vector<Flat> flat;
  flatten(node, "", file, {"source", "sink", "transforms", "errors.dead-letter"}, &flat, ctx);
  std::string name;
  for (auto& f : flat)
    if (f.key == "name" && f.value.IsScalar()) name = f.value.Scalar();
  std::string context = name.empty() ? fmt::format("pipelines[{}]", index)
                                     : fmt::format("pipeline '{}'", name);
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
  // Names label logs, metrics, state and transactional ids: printable, no spaces.
  for (auto& f : flat) {
    if (f.key != "name" || !f.value.IsScalar()) continue;
    bool ok = !name.empty() && name.size() <= 200;
    for (unsigned char ch : name) ok = ok && (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.');
    if (!ok) {
      std::string shown;
      for (unsigned char ch : name)
        shown += std::isprint(ch) ? std::string(1, static_cast<char>(ch)) : fmt::format("\\x{:02x}", ch);
      ctx.error(f.value_mark, fmt::format("{}: key 'name' must be 1-200 letters, digits, '-', '_' "
                                          "or '.' (it names logs, metrics and state), got '{}'",
                                          context, shown));
    }
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
  if (p.commit_after_takeover_ms < 0)
    ctx.error(c.marks.count("commit.after.takeover") ? c.marks["commit.after.takeover"] : at,
              fmt::format("{}: key 'commit.after.takeover' must not be negative", context));
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
    source_clean = read_clean(source->value, source->value_mark, EX_KIND_SOURCE, "source", name,
                              reg, &p.source, ctx);
  if (sink == nullptr)
    ctx.error(at, fmt::format("{}: missing required key 'sink'", context));
  else
    sink_clean = read_clean(sink->value, sink->value_mark, EX_KIND_SINK, "sink", name, reg,
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
                                              fmt::format("transforms[{}]", i++), name, reg, &cs,
                                              ctx));
        p.transforms.push_back(std::move(cs));
      }
    }
  }
  if (dlq != nullptr) {
    ComponentSpec cs;
    size_t before = ctx.errors->size();
    if (read_component(dlq->value, dlq->value_mark, EX_KIND_SINK, "errors.dead-letter", name,
                       reg, &cs, ctx)) {
      dlq_clean = ctx.errors->size() == before;
      p.dead_letter = std::move(cs);
    }
  }
  if (p.error_policy == ErrorPolicy::dead_letter && !p.dead_letter)
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
  }
  // Last, so that the sink sees the pipeline's delivery as create() will.
  auto plugin_check = [&](const ComponentSpec& cs, bool clean) {
    if (!clean) return;
    if (auto d = check_with_plugin(cs, name, fmt::format("pipeline '{}' {}", name, cs.where)))
      ctx.errors->push_back(std::move(*d));
  };
  plugin_check(p.source, source_clean);
  for (size_t i = 0; i < p.transforms.size() && i < transforms_clean.size(); ++i)
    plugin_check(p.transforms[i], transforms_clean[i]);
  plugin_check(p.sink, sink_clean);
  if (p.dead_letter) plugin_check(*p.dead_letter, dlq_clean);
  spec->pipelines.push_back(std::move(p));
}

}  // namespace

bool is_pipeline_file_name(const std::string& name) {
  auto ends = [&](const char* s) {
    const size_t n = std::strlen(s);
    return name.size() >= n && name.compare(name.size() - n, n, s) == 0;
  };
  if (name.empty() || name[0] == '.') return false;  // editor temp files, .swp
  if (ends(".test.yaml") || ends(".test.yml")) return false;  // `exactly test` cases
  return ends(".yaml") || ends(".yml");
}

std::vector<std::string> expand_paths(const std::vector<std::string>& paths,
                                      std::vector<Diagnostic>* errors) {
  std::vector<std::string> files;
  for (auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto& e : fs::directory_iterator(p, ec)) {
        if (is_pipeline_file_name(e.path().filename().string())) found.push_back(e.path().string());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      errors->push_back({Mark{p, 0, 0}, "no such file or directory"});
    }
  }
  return files;
}

LoadResult load(const std::vector<std::string>& paths, plugin::Registry& registry) {
  LoadResult r;
  Ctx ctx{&r.errors};
  r.spec.files = expand_paths(paths, &r.errors);
  if (r.spec.files.empty() && r.errors.empty())
    r.errors.push_back({Mark{paths.empty() ? "" : paths[0], 0, 0}, "no pipeline files found"});

  struct Doc {
    std::string file;
    YAML::Node root;
    std::vector<Flat> flat;
  };
  std::vector<Doc> docs;
  for (auto& file : r.spec.files) {
    Doc d;
    d.file = file;
    std::string text;
    if (!read_text(file, text)) {
      ctx.error(Mark{file, 0, 0}, "cannot read file");
      continue;
    }
    if (auto problem = check_yaml_text(text)) {
      ctx.error(Mark{file, problem->line, problem->col}, problem->message);
      continue;
    }
    try {
      if (auto problem = check_yaml_stream(text)) {
        ctx.error(Mark{file, problem->line, problem->col}, problem->message);
        continue;
      }
      auto all = YAML::LoadAll(text);
      if (auto problem = check_yaml_documents(all, d.root)) {
        ctx.error(Mark{file, problem->line, problem->col}, problem->message);
        continue;
      }
    } catch (const YAML::ParserException& e) {
      ctx.error(mark_at(file, e.mark), fmt::format("malformed YAML: {}", e.msg));
      continue;
    }
    if (d.root.IsNull()) {
      ctx.error(Mark{file, 1, 1}, "empty file: expected a map with 'pipelines'");
      continue;
    }
    if (!d.root.IsMap()) {
      ctx.error(mark_at(file, d.root.Mark()),
                fmt::format("expected a map with 'pipelines' at the top, got {}", node_kind(d.root)));
      continue;
    }
    flatten(d.root, "", file, {"pipelines"}, &d.flat, ctx);
    docs.push_back(std::move(d));
  }

  // plugin.path first, so components can be resolved.
  std::vector<std::string> dirs;
  bool insecure = false;
  for (auto& d : docs) {
    std::vector<Flat> top;
    for (auto& f : d.flat)
      if (f.key != "pipelines") top.push_back(f);
    Checked c = check_fields(top, file_fields(), "top level", Mark{d.file, 1, 1}, ctx);
    std::error_code abs_ec;
    fs::path base = fs::absolute(d.file, abs_ec).parent_path();
    for (auto& [k, v] : c.values) {
      if (k == "plugin.insecure") {
        insecure = insecure || v == "true";
      } else if (k == "plugin.path") {
        fs::path p(v);
        dirs.push_back((p.is_absolute() ? p : base / p).lexically_normal().string());
      } else if (k == "metrics.listen") {
        if (std::string why = listen_problem(v); !why.empty()) {
          ctx.error(c.marks[k], fmt::format("metrics.listen '{}': {}", v, why));
          continue;
        }
        if (!r.spec.metrics_listen.empty() && r.spec.metrics_listen != v)
          ctx.error(c.marks[k], fmt::format("metrics.listen is set to '{}' already at {}", v,
                                            r.spec.metrics_mark.str()));
        r.spec.metrics_listen = v;
        r.spec.metrics_mark = c.marks[k];
      } else if (k == "stage.timeout" || k == "shutdown.timeout") {
        auto ms = parse_duration_ms(v);
        if (!ms || *ms < 0 || (k == "shutdown.timeout" && *ms == 0)) {
          ctx.error(c.marks[k], fmt::format("{} '{}': {}", k, v,
                                            k == "shutdown.timeout" ? "must be a positive duration (e.g. 30s)"
                                                                    : "must be a duration (e.g. 60s; 0 = never)"));
          continue;
        }
        int64_t& slot = k == "stage.timeout" ? r.spec.stage_timeout_ms : r.spec.shutdown_timeout_ms;
        Mark& seen = k == "stage.timeout" ? r.spec.stage_timeout_mark : r.spec.shutdown_timeout_mark;
        if (!seen.file.empty() && slot != *ms)
          ctx.error(c.marks[k], fmt::format("{} is set to a different value already at {}", k, seen.str()));
        slot = *ms;
        seen = c.marks[k];
      }
    }
  }
  for (auto& d : plugin::default_plugin_path()) dirs.push_back(d);
  r.spec.plugin_path = dirs;
  registry.set_insecure(insecure);
  registry.scan(dirs);

  for (auto& d : docs) {
    for (auto& f : d.flat) {
      if (f.key != "pipelines") continue;
      if (!f.value.IsSequence()) {
        ctx.error(f.value_mark, fmt::format("key 'pipelines' expects a list, got {}",
                                            node_kind(f.value)));
        continue;
      }
      size_t i = 0;
      for (const auto& p : f.value) read_pipeline(p, mark_at(d.file, p.Mark()), d.file, registry,
                                                  &r.spec, ctx, i++);
    }
  }
  // Report in reading order, whatever order the checks ran in.
  std::stable_sort(r.errors.begin(), r.errors.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.mark.file, a.mark.line, a.mark.col) < std::tie(b.mark.file, b.mark.line, b.mark.col);
  });
  if (r.ok() && r.spec.pipelines.empty())
    r.errors.push_back({Mark{r.spec.files.empty() ? "" : r.spec.files[0], 0, 0},
                        "no pipelines defined (expected a 'pipelines' list)"});
  return r;
}

}  // namespace exactly::config
