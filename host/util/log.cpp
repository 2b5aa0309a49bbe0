#include "util/log.hpp"

#include "util/secrets.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace exactly::log {
namespace {
std::atomic<int> g_level{static_cast<int>(Level::info)};
std::mutex g_mu;
const char* name(Level l) {
  switch (l) {
    case Level::debug: return "DEBUG";
    case Level::info: return "INFO";
    case Level::warn: return "WARN";
    default: return "ERROR";
  }
}
}  // namespace

void set_level(Level l) { g_level = static_cast<int>(l); }
Level level() { return static_cast<Level>(g_level.load()); }

void write(Level l, std::string_view scope, std::string_view msg) {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto t = system_clock::to_time_t(now);
  int ms = static_cast<int>(duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string text = secrets::scrub(msg);
  std::lock_guard<std::mutex> g(g_mu);
  std::fprintf(stderr, "%s.%03dZ %-5s [%.*s] %.*s\n", ts, ms, name(l), static_cast<int>(scope.size()),
               scope.data(), static_cast<int>(text.size()), text.data());
  std::fflush(stderr);
}
}  // namespace exactly::log
