#include "cli/commands.hpp"
#include "plugin/loader.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace exactly::cli {
namespace {

const char* type_name(ex_config_type t) {
  switch (t) {
    case EX_CFG_STRING: return "string";
    case EX_CFG_INT: return "int";
    case EX_CFG_DOUBLE: return "double";
    case EX_CFG_BOOL: return "bool";
    case EX_CFG_LIST: return "list";
    case EX_CFG_DURATION: return "duration";
    case EX_CFG_SIZE: return "size";
    case EX_CFG_MAP: return "map";
  }
  return "?";
}

std::string json(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"') o += "\\\"";
    else if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else if (c < 0x20) o += fmt::format("\\u{:04x}", c);
    else o += static_cast<char>(c);
  }
  return o + "\"";
}

}  // namespace

int cmd_plugins(const std::vector<std::string>& args) {
  bool as_json = false;
  std::vector<std::string> dirs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") as_json = true;
    else if (args[i] == "--plugin-path" && i + 1 < args.size()) dirs.push_back(args[++i]);
    else {
      std::fprintf(stderr, "exactly plugins: unknown argument '%s'\n", args[i].c_str());
      return 2;
    }
  }
  for (auto& d : plugin::default_plugin_path()) dirs.push_back(d);
  plugin::Registry reg;
  reg.scan(dirs);

  if (as_json) {
    std::string o = "{\"libraries\":[";
    bool first_lib = true;
    for (auto& lib : reg.libraries()) {
      o += first_lib ? "" : ",";
      first_lib = false;
      o += fmt::format("{{\"path\":{},\"name\":{},\"version\":{},\"abi\":\"{}.{}\",\"components\":[",
                       json(lib->path), json(lib->name), json(lib->version), lib->abi_version >> 16,
                       lib->abi_version & 0xffff);
      bool first_c = true;
      for (auto& c : lib->components) {
        o += first_c ? "" : ",";
        first_c = false;
        o += fmt::format("{{\"kind\":{},\"name\":{},\"doc\":{},\"config\":[", json(plugin::kind_name(c.kind)),
                         json(c.name), json(c.doc));
        bool first_f = true;
        for (auto& f : c.fields) {
          o += first_f ? "" : ",";
          first_f = false;
          o += fmt::format("{{\"key\":{},\"type\":{},\"required\":{},\"default\":{},\"doc\":{},\"allowed\":[",
                           json(f.key), json(type_name(f.type)), f.required ? "true" : "false",
                           f.has_default ? json(f.default_value) : "null", json(f.doc));
          for (size_t i = 0; i < f.allowed.size(); ++i) o += (i ? "," : "") + json(f.allowed[i]);
          o += "]}";
        }
        o += "]}";
      }
      o += "]}";
    }
    o += "],\"failures\":[";
    for (size_t i = 0; i < reg.failures().size(); ++i)
      o += fmt::format("{}{{\"path\":{},\"reason\":{}}}", i ? "," : "", json(reg.failures()[i].path),
                       json(reg.failures()[i].reason));
    o += "]}\n";
    std::fputs(o.c_str(), stdout);
    return 0;
  }

  if (reg.libraries().empty()) {
    std::printf("no plugins found; searched:\n");
    for (auto& d : reg.searched()) std::printf("  %s\n", d.c_str());
  }
  for (auto& lib : reg.libraries()) {
    std::printf("%s %s  (%s, ABI %u.%u)\n", lib->name.c_str(), lib->version.c_str(),
                lib->path.c_str(), lib->abi_version >> 16, lib->abi_version & 0xffff);
    for (auto& c : lib->components) {
      std::printf("  %-9s %-12s %s\n", plugin::kind_name(c.kind), c.name.c_str(), c.doc.c_str());
      for (auto& f : c.fields) {
        std::string extra;
        if (f.required) extra = "required";
        else if (f.has_default) extra = "default " + (f.default_value.empty() ? "\"\"" : f.default_value);
        if (!f.allowed.empty()) {
          std::string a;
          for (auto& x : f.allowed) a += (a.empty() ? "" : "|") + x;
          extra += (extra.empty() ? "" : ", ") + std::string("one of ") + a;
        }
        std::printf("      %-28s %-9s %-28s %s\n", f.key.c_str(), type_name(f.type), extra.c_str(),
                    f.doc.c_str());
      }
    }
    std::printf("\n");
  }
  for (auto& f : reg.failures())
    std::printf("FAILED %s: %s\n", f.path.c_str(), f.reason.c_str());
  return 0;
}

}  // namespace exactly::cli
