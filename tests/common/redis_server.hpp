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
  // `tls`: empty = plaintext; "tls" = TLS only; "tls-clients" = TLS with client
  // certificates required. The CA and certificates are in tls_dir().
  explicit RedisServer(const std::string& tag, const std::string& fsync = "",
                       const std::string& extra = "", const std::string& tls = "")
      : dir_(temp_dir("redis-" + tag)), fsync_(fsync), extra_(extra), tls_(tls) {
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
    if (tls_ == "tls") cmd += " --tls";
    if (tls_ == "tls-clients") cmd += " --tls --tls-clients yes";
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
    RunResult r = run("redis-cli -h 127.0.0.1 -p " + std::to_string(port_) + " " + cli_tls() + args);
    if (r.exit_code != 0) throw std::runtime_error("redis-cli " + args + ": " + r.err);
    while (!r.out.empty() && (r.out.back() == '\n' || r.out.back() == ' ')) r.out.pop_back();
    return r.out;
  }
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  const fs::path& dir() const { return dir_; }
  fs::path tls_dir() const { return dir_ / "tls"; }

 private:
  static std::string script() { return std::string(EXACTLY_SOURCE_DIR) + "/tests/tools/redis-server.sh"; }
  std::string cli_tls() const {
    std::string a = read_file(dir_ / "cli.args");
    while (!a.empty() && (a.back() == '\n' || a.back() == ' ')) a.pop_back();
    return a.empty() ? "" : a + " ";
  }
  fs::path dir_;
  std::string fsync_, extra_, tls_;
  std::string address_;
  int port_ = 0;
};

}  // namespace exactly::test
