// A broker of the test binary's own that speaks only SASL_SSL (`kafka-broker.sh start
// --sasl-ssl`: a throwaway CA, SCRAM-SHA-512 and PLAIN users), started once per process
// with `extra` start arguments (e.g. an authorizer's --prop), stopped at exit; and the
// independent Java tool logged in to it as the test's user.
#pragma once

#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>

#include "kafka_env.hpp"
#include "test_util.hpp"

namespace exactly::test {

struct SecureBroker {
  fs::path dir;
  std::string bootstrap;
  std::string password;
  fs::path ca() const { return dir / "sasl-ssl" / "ca.pem"; }
  fs::path client_properties() const { return dir / "sasl-ssl" / "client.properties"; }
};

inline std::string random_hex(size_t n) {
  std::random_device rd;
  std::string s;
  for (size_t i = 0; i < n; ++i) s += "0123456789abcdef"[rd() % 16];
  return s;
}

inline SecureBroker& secure_broker(const std::string& extra = "") {
  static SecureBroker b;
  if (!b.bootstrap.empty()) return b;
  b.dir = temp_dir("kafka-sasl-ssl");
  b.password = "exactly-pw-" + random_hex(20);
  auto r = run("EXACTLY_KAFKA_SASL_PASSWORD=" + b.password + " " + tools_dir() +
                   "/kafka-broker.sh start --sasl-ssl --dir " + b.dir.string() + " " + extra,
               temp_dir("ksaslstart"));
  if (r.exit_code != 0) throw std::runtime_error("cannot start the SASL_SSL broker: " + r.err);
  auto lines = lines_of(r.out);
  b.bootstrap = lines.empty() ? "" : lines.back();
  std::atexit([] {
    std::system((tools_dir() + "/kafka-broker.sh stop --clean --dir " + secure_broker().dir.string() +
                 " >/dev/null 2>&1").c_str());
  });
  return b;
}

// kafka-tool.sh against the secure broker, as the test's user; a failure throws.
inline RunResult secure_tool(const std::string& args) {
  auto& b = secure_broker();
  auto r = run(tools_dir() + "/kafka-tool.sh " + args + " --bootstrap " + b.bootstrap +
                   " --command-config " + b.client_properties().string(),
               temp_dir("ktool"));
  if (r.exit_code != 0) throw std::runtime_error("kafka-tool " + args + " failed: " + r.out + r.err);
  return r;
}

}  // namespace exactly::test
