// The log on spdlog: one logger writing to stderr, every line flushed as it is written
// (a crash or std::_Exit must not lose the lines before it). The scope travels as the
// log message's logger name, so one logger serves every pipeline.
#include "util/log.hpp"

#include "util/json_string.hpp"
#include "util/log_output.hpp"
#include "util/secrets.hpp"

#include <spdlog/formatter.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <iterator>
#include <memory>

namespace exactly::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::info)};

const char* upper_name(Level l) {
  switch (l) {
    case Level::debug: return "DEBUG";
    case Level::info: return "INFO";
    case Level::warn: return "WARN";
    default: return "ERROR";
  }
}

const char* lower_name(Level l) {
  switch (l) {
    case Level::debug: return "debug";
    case Level::info: return "info";
    case Level::warn: return "warn";
    default: return "error";
  }
}

spdlog::level::level_enum to_spdlog(Level l) {
  switch (l) {
    case Level::debug: return spdlog::level::debug;
    case Level::info: return spdlog::level::info;
    case Level::warn: return spdlog::level::warn;
    default: return spdlog::level::err;
  }
}

Level from_spdlog(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace:
    case spdlog::level::debug: return Level::debug;
    case spdlog::level::info: return Level::info;
    case spdlog::level::warn: return Level::warn;
    default: return Level::error;
  }
}

// 2026-11-24T18:45:27.123Z
std::string utc_time(spdlog::log_clock::time_point at) {
  using namespace std::chrono;
  auto t = spdlog::log_clock::to_time_t(at);
  int ms = static_cast<int>(duration_cast<milliseconds>(at.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", ts, ms);
}

// Text from outside (a file name, a partition, a plugin's or a broker's message) must not
// start a line of its own that reads as another entry: a line break continues the entry
// on an indented line (as the multi-line reports do), a trailing one is dropped, and other
// control characters are shown as \xNN. Tabs and UTF-8 pass as they are.
void append_one_entry(std::string_view text, spdlog::memory_buf_t& out) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char ch = static_cast<unsigned char>(text[i]);
    if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    if (ch == '\n') {
      out.append(std::string_view("\n    "));
    } else if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", ch);
    } else {
      out.push_back(static_cast<char>(ch));
    }
  }
}

class LineFormatter final : public spdlog::formatter {
 public:
  explicit LineFormatter(Format f) : format_(f) {}

  void format(const spdlog::details::log_msg& m, spdlog::memory_buf_t& out) override {
    std::string_view scope(m.logger_name.data(), m.logger_name.size());
    std::string_view text(m.payload.data(), m.payload.size());
    Level l = from_spdlog(m.level);
    auto to = std::back_inserter(out);
    if (format_ == Format::text) {
      fmt::format_to(to, "{} {:<5} [", utc_time(m.time), upper_name(l));
      append_one_entry(scope, out);
      out.append(std::string_view("] "));
      append_one_entry(text, out);
      out.push_back('\n');
      return;
    }
    fmt::format_to(to, "{{\"time\":\"{}\",\"level\":\"{}\",\"scope\":{}", utc_time(m.time), lower_name(l),
                   json::quote(scope));
    // A pipeline's lines carry its name as a field of its own, for filtering.
    constexpr std::string_view kPipeline = "pipeline:";
    if (scope.substr(0, kPipeline.size()) == kPipeline)
      fmt::format_to(to, ",\"pipeline\":{}", json::quote(scope.substr(kPipeline.size())));
    fmt::format_to(to, ",\"message\":{}}}\n", json::quote(text));
  }

  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<LineFormatter>(format_); }

 private:
  Format format_;
};

// spdlog's logger names its lines after itself; this one takes the scope per line.
class ScopedLogger final : public spdlog::logger {
 public:
  using spdlog::logger::logger;
  void write(Level l, std::string_view scope, std::string_view text) {
    auto level = to_spdlog(l);
    spdlog::details::log_msg m(spdlog::string_view_t(scope.data(), scope.size()), level,
                               spdlog::string_view_t(text.data(), text.size()));
    log_it_(m, should_log(level), tracer_.enabled());
  }
};

ScopedLogger& logger() {
  // Never destroyed: threads and exit paths log until the very end of the process.
  static ScopedLogger* l = [] {
    auto* made = new ScopedLogger("exactly", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    made->set_formatter(std::make_unique<LineFormatter>(Format::text));
    made->set_level(spdlog::level::trace);  // the level is ours: g_level, checked in write()
    made->flush_on(spdlog::level::trace);
    return made;
  }();
  return *l;
}

}  // namespace

void set_level(Level l) { g_level = static_cast<int>(l); }
Level level() { return static_cast<Level>(g_level.load()); }

namespace {
std::atomic<Format> g_format{Format::text};
}  // namespace

void set_format(Format f) {
  g_format.store(f);
  logger().set_formatter(std::make_unique<LineFormatter>(f));
}

Format format() { return g_format.load(); }

std::optional<Level> parse_level(std::string_view name) {
  for (Level l : {Level::debug, Level::info, Level::warn, Level::error})
    if (name == lower_name(l)) return l;
  return std::nullopt;
}

std::optional<Format> parse_format(std::string_view name) {
  if (name == "text") return Format::text;
  if (name == "json") return Format::json;
  return std::nullopt;
}

void write(Level l, std::string_view scope, std::string_view msg) {
  // Plugins' lines come here directly: --log-level applies to them as to the host's own.
  if (l < level()) return;
  logger().write(l, scope, secrets::scrub(msg));
}

}  // namespace exactly::log
