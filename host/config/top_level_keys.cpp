#include "config/top_level_keys.hpp"

#include "config/host_schema.hpp"
#include "config/schema_check.hpp"
#include "config/units.hpp"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>

namespace exactly::config {
namespace fs = std::filesystem;

namespace {

// "PORT", ":PORT" or "HOST:PORT" (what the metrics server accepts); "" when fine.
std::string listen_problem(const std::string& v) {
  if (v.empty()) return "empty: give address:port (e.g. 127.0.0.1:9464), or remove the key for no metrics";
  size_t colon = v.rfind(':');
  std::string host = colon == std::string::npos ? "" : v.substr(0, colon);
  std::string port = colon == std::string::npos ? v : v.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    return "expected address:port with a port number, e.g. 127.0.0.1:9464";
  if (std::stoi(port) > 65535) return "port " + port + " is out of range (0-65535)";
  // Debian's civetweb is built without IPv6: "[::1]:9464" would pass here and then stop
  // `exactly run` with "invalid port spec".
  if (host.find_first_of(":[]") != std::string::npos)
    return "IPv6 addresses are not supported by the metrics server (civetweb is built without "
           "IPv6): use an IPv4 address or a host name, e.g. 127.0.0.1:9464 or 0.0.0.0:9464";
  for (char ch : host)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-')
      return "the address part '" + host + "' is not a host name or IP address";
  return "";
}

}  // namespace

void read_top_level(const std::vector<Flat>& flat, const std::string& file, HostSpec* spec,
                    PluginSettings* out, ErrorSink& ctx) {
  std::vector<Flat> top;
  for (auto& f : flat)
    if (f.key != "pipelines") top.push_back(f);
  Checked c = check_fields(top, file_fields(), "top level", Mark{file, 1, 1}, ctx);
  std::error_code abs_ec;
  fs::path base = fs::absolute(file, abs_ec).parent_path();
  for (auto& [k, v] : c.values) {
    if (k == "plugin.insecure") {
      out->insecure = out->insecure || v == "true";
    } else if (k == "plugin.path") {
      fs::path p(v);
      const std::string dir = (p.is_absolute() ? p : base / p).lexically_normal().string();
      // As --plugin-path: a typo would otherwise search nothing there, silently.
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) {
        ctx.error(c.marks[k], fmt::format("plugin.path '{}': {} is not a directory", v, dir));
        continue;
      }
      out->plugin_dirs.push_back(dir);
    } else if (k == "metrics.listen") {
      if (std::string why = listen_problem(v); !why.empty()) {
        ctx.error(c.marks[k], fmt::format("metrics.listen '{}': {}", v, why));
        continue;
      }
      // "9464", ":9464" and "127.0.0.1:9464" are one address (the server's reading).
      auto canonical = [](std::string a) {
        if (a.find(':') == std::string::npos) return "127.0.0.1:" + a;
        return a[0] == ':' ? "127.0.0.1" + a : a;
      };
      // Compared with the first file that set it, which stays the one in force: a third
      // file agreeing with the first is not the one in error.
      if (!spec->metrics_listen.empty()) {
        if (canonical(spec->metrics_listen) != canonical(v))
          ctx.error(c.marks[k], fmt::format("metrics.listen '{}': it is set to '{}' already at {}", v,
                                            spec->metrics_listen, spec->metrics_mark.str()));
        continue;
      }
      spec->metrics_listen = v;
      spec->metrics_mark = c.marks[k];
    } else if (k == "stage.timeout" || k == "shutdown.timeout") {
      auto ms = parse_duration_ms(v);
      // A stop or a reload that replaces a pipeline waits this long for its running round
      // to commit: under a second that is no wait at all (1ms was accepted, and the next
      // reload that restarted a pipeline ended the host with exit 3: QA).
      if (!ms || *ms < 0) {
        ctx.error(c.marks[k], fmt::format("{} '{}': must be a duration (e.g. 60s; at most 36500d)", k, v));
        continue;
      }
      if (k == "shutdown.timeout" && *ms < 1000) {
        ctx.error(c.marks[k], fmt::format("shutdown.timeout is {} ms: it must be at least 1s (a stop "
                                          "waits this long for the running rounds to commit)", *ms));
        continue;
      }
      int64_t& slot = k == "stage.timeout" ? spec->stage_timeout_ms : spec->shutdown_timeout_ms;
      Mark& seen = k == "stage.timeout" ? spec->stage_timeout_mark : spec->shutdown_timeout_mark;
      if (!seen.file.empty() && slot != *ms)
        ctx.error(c.marks[k], fmt::format("{} is set to a different value already at {}", k, seen.str()));
      slot = *ms;
      seen = c.marks[k];
    }
  }
}

}  // namespace exactly::config
