#include "config/schema_check.hpp"

#include "config/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

namespace exactly::config {
using plugin::Field;

namespace {

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
    case EX_CFG_DURATION: return "a duration such as 500ms, 5s, 2m, 1h (at most 36500d)";
    case EX_CFG_SIZE: return "a size such as 512, 64KiB, 16MiB, 1GiB, 2TiB (at most 4096TiB)";
    case EX_CFG_MAP: return "a map";
  }
  return "a value";
}

// Normalises one scalar for a field; returns nullopt after reporting.
std::optional<std::string> normalise(const Field& f, const std::string& raw, const Mark& m,
                                     const std::string& context, ErrorSink& ctx) {
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

// The SDK's require_string() refuses "" when the plugin opens; say so here, with the line.
void required_but_empty(const Field& f, const Flat& fv, const std::string& context,
                        ErrorSink& ctx) {
  ctx.error(fv.value_mark.line > 0 ? fv.value_mark : fv.key_mark,
            fmt::format("{}: key '{}' is required and must not be empty ({})", context, f.key,
                        f.doc.empty() ? type_name(f.type) : f.doc));
}

}  // namespace

// Checks flattened values against a schema: unknown, wrongly typed and missing keys.
Checked check_fields(const std::vector<Flat>& flat, const std::vector<Field>& fields,
                     const std::string& context, const Mark& block, ErrorSink& ctx) {
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
      // A known group of keys (commit, metrics, retention) given as a plain value or an
      // empty map: said as such, not as an unknown key the user would look for a typo in.
      std::string members;
      for (auto& cand : fields)
        if (cand.key.rfind(fv.key + ".", 0) == 0)
          members += (members.empty() ? "" : ", ") + cand.key.substr(fv.key.size() + 1);
      if (!members.empty())
        ctx.error(fv.value_mark.line > 0 ? fv.value_mark : fv.key_mark,
                  fmt::format("{}: key '{}' expects a map with some of: {}; got {}", context, fv.key,
                              members, fv.value.IsMap() ? "an empty map" : node_kind(fv.value)));
      else
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
      const size_t values_before = c.values.size();
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
        continue;
      }
      if (f->required && c.values.size() == values_before && fv.value.size() == 0)
        required_but_empty(*f, fv, context, ctx);
      continue;
    }
    if (!fv.value.IsScalar()) {
      ctx.error(fv.value_mark, fmt::format("{}: key '{}' expects {}, got {}", context, fv.key,
                                           type_name(f->type), node_kind(fv.value)));
      continue;
    }
    if (f->required && f->type == EX_CFG_STRING &&
        fv.value.Scalar().find_first_not_of(" \t") == std::string::npos) {
      required_but_empty(*f, fv, context, ctx);
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

std::string value_of(const Checked& c, const std::string& key) {
  for (auto& [k, v] : c.values)
    if (k == key) return v;
  return {};
}

}  // namespace exactly::config
