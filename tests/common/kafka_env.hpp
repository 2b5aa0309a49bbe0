#pragma once
// A real Kafka broker for integration tests: the one tests/run.sh started
// ($EXACTLY_KAFKA_BOOTSTRAP), or one this test binary starts with the project's
// script and stops at exit. Plus the independent Java checker (tests/tools).
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>

#include "test_util.hpp"

namespace exactly::test {

inline std::string tools_dir() { return std::string(EXACTLY_SOURCE_DIR) + "/tests/tools"; }

inline std::string kafka_bootstrap() {
  static std::once_flag once;
  static std::string bootstrap;
  std::call_once(once, [] {
    if (const char* b = std::getenv("EXACTLY_KAFKA_BOOTSTRAP"); b && *b) {
      bootstrap = b;
      return;
    }
    static fs::path dir = temp_dir("kafka");
    auto r = run(tools_dir() + "/kafka-broker.sh start --dir " + dir.string(), temp_dir("kstart"));
    if (r.exit_code != 0) throw std::runtime_error("cannot start Kafka broker: " + r.err);
    auto lines = lines_of(r.out);
    bootstrap = lines.empty() ? "" : lines.back();
    std::atexit([] {
      std::system((tools_dir() + "/kafka-broker.sh stop --clean --dir " + dir.string() +
                   " >/dev/null 2>&1").c_str());
    });
  });
  return bootstrap;
}

// Runs the Java tool; throws with its stderr when `must_succeed` and it fails.
inline RunResult kafka_tool(const std::string& args, bool must_succeed = true) {
  auto r = run(tools_dir() + "/kafka-tool.sh " + args + " --bootstrap " + kafka_bootstrap(),
               temp_dir("ktool"));
  if (must_succeed && r.exit_code != 0)
    throw std::runtime_error("kafka-tool " + args + " failed: " + r.out + r.err);
  return r;
}

// A topic or group name no other test (or earlier run on the same broker) uses.
inline std::string unique_name(const std::string& prefix) {
  static std::atomic<int> n{0};
  std::random_device rd;
  return prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(n++) + "-" +
         std::to_string(rd() % 100000);
}

// The number after "key": in a one-line JSON answer (the tool's own format).
inline long long json_number(const std::string& json, const std::string& key) {
  auto p = json.find("\"" + key + "\":");
  if (p == std::string::npos) throw std::runtime_error("no " + key + " in " + json);
  return std::stoll(json.substr(p + key.size() + 3));
}

inline bool heavy() {
  const char* h = std::getenv("EXACTLY_HEAVY");
  return h && std::string(h) == "1";
}

}  // namespace exactly::test
