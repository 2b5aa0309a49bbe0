#pragma once
// A private redis-server for a test, started and stopped through
// tests/tools/redis-server.sh (the same script the benchmark uses), plus redis-cli.
#include <stdexcept>
#include <string>

#include "test_util.hpp"

namespace exactly::test {

class RedisServer {
 public:
  // `fsync`: empty = no AOF; else appendonly yes with this appendfsync.
  explicit RedisServer(const std::string& tag, const std::string& fsync = "",
                       const std::string& extra = "")
      : dir_(temp_dir("redis-" + tag)), fsync_(fsync), extra_(extra) {
    start();
  }
  ~RedisServer() { run(script() + " stop --clean --dir " + dir_.string()); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts it (again: same port, same AOF).
  void start() {
    std::string cmd = script() + " start --dir " + dir_.string();
    if (!fsync_.empty()) cmd += " --appendfsync " + fsync_;
    if (!extra_.empty()) cmd += " --arg '" + extra_ + "'";
    RunResult r = run(cmd);
    if (r.exit_code != 0) throw std::runtime_error("redis-server.sh start failed: " + r.err);
    auto lines = lines_of(r.out);
    if (lines.empty()) throw std::runtime_error("redis-server.sh start printed nothing");
    address_ = lines.back();
    port_ = std::stoi(address_.substr(address_.rfind(':') + 1));
  }
  void kill9() {
    RunResult r = run(script() + " kill --dir " + dir_.string());
    if (r.exit_code != 0) throw std::runtime_error("redis-server.sh kill failed: " + r.err);
  }
  // redis-cli's answer, trimmed; throws when redis-cli fails.
  std::string cli(const std::string& args) const {
    RunResult r = run("redis-cli -h 127.0.0.1 -p " + std::to_string(port_) + " " + args);
    if (r.exit_code != 0) throw std::runtime_error("redis-cli " + args + ": " + r.err);
    while (!r.out.empty() && (r.out.back() == '\n' || r.out.back() == ' ')) r.out.pop_back();
    return r.out;
  }
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  const fs::path& dir() const { return dir_; }

 private:
  static std::string script() { return std::string(EXACTLY_SOURCE_DIR) + "/tests/tools/redis-server.sh"; }
  fs::path dir_;
  std::string fsync_, extra_;
  std::string address_;
  int port_ = 0;
};

}  // namespace exactly::test
