#pragma once
// tests/tools/http-test-server.py as a child process of the test: started on a free
// loopback port, its request log read back as structs.
#include <simdjson.h>

#include <chrono>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace exactly::test {

struct SeenRequest {
  double t = 0;  // arrival, seconds since the epoch (server clock)
  std::string method, path, body;
  std::map<std::string, std::string> headers;  // names lower-cased
  int status = 0;
  int client_port = 0;  // one per connection: tells kept-alive connections apart
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

class HttpTestServer {
 public:
  // With `tls`: HTTPS with a fresh self-signed certificate for 127.0.0.1 (cert()).
  explicit HttpTestServer(bool tls = false) : dir_(temp_dir("http-server")), tls_(tls) {
    fs::path port_file = dir_ / "port";
    std::vector<std::string> argv = {"/usr/bin/env", "python3",
                                     std::string(EXACTLY_SOURCE_DIR) + "/tests/tools/http-test-server.py",
                                     "--log", log().string(), "--port-file", port_file.string()};
    if (tls) {
      auto r = run("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
                   "-addext subjectAltName=IP:127.0.0.1 -keyout " + (dir_ / "key.pem").string() +
                   " -out " + cert().string(), dir_);
      if (r.exit_code != 0) throw std::runtime_error("openssl: " + r.err);
      argv.insert(argv.end(), {"--tls-cert", cert().string(), "--tls-key", (dir_ / "key.pem").string()});
    }
    child_ = std::make_unique<Child>(argv, dir_ / "server.out");
    for (int i = 0; i < 200 && !fs::exists(port_file); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!fs::exists(port_file))
      throw std::runtime_error("http test server did not start: " + read_file(dir_ / "server.out"));
    port_ = std::stoi(read_file(port_file));
  }
  int port() const { return port_; }
  std::string base() const {
    return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
  }
  fs::path cert() const { return dir_ / "cert.pem"; }
  fs::path log() const { return dir_ / "requests.jsonl"; }

  std::vector<SeenRequest> requests() const {
    std::vector<SeenRequest> out;
    simdjson::dom::parser parser;
    // Only whole lines: the server may be writing the last one while it is read here.
    std::string text = read_file(log());
    const size_t end = text.rfind('\n');
    text.resize(end == std::string::npos ? 0 : end + 1);
    for (const auto& line : lines_of(text)) {
      if (line.empty()) continue;
      simdjson::dom::element e = parser.parse(line);
      SeenRequest r;
      r.t = double(e["t"]);
      r.method = std::string(std::string_view(e["method"]));
      r.path = std::string(std::string_view(e["path"]));
      r.body = std::string(std::string_view(e["body"]));
      r.status = static_cast<int>(int64_t(e["status"]));
      r.client_port = static_cast<int>(int64_t(e["client_port"]));
      for (auto [k, v] : simdjson::dom::object(e["headers"]))
        r.headers[std::string(k)] = std::string(std::string_view(v));
      out.push_back(std::move(r));
    }
    return out;
  }

 private:
  fs::path dir_;
  bool tls_ = false;
  std::unique_ptr<Child> child_;
  int port_ = 0;
};

}  // namespace exactly::test
