#pragma once
// Reading a running host's /metrics from a test.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>

namespace exactly::test {

// GET `path` (/metrics by default) from 127.0.0.1:port: the whole answer, status line
// and headers first ("" when nothing answers).
inline std::string scrape(int port, const std::string& path = "/metrics") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return out;
}

// The port in the host's "metrics on http://127.0.0.1:PORT/metrics", or 0.
inline int metrics_port(const std::string& log) {
  std::smatch m;
  static const std::regex re(R"(metrics on http://127\.0\.0\.1:(\d+)/metrics)");
  return std::regex_search(log, m, re) ? std::stoi(m[1]) : 0;
}

// Scrapes the host whose log is `log` until the page holds `needle` (up to ~10 s); the
// last page read, which the caller checks.
inline std::string scrape_until(const std::filesystem::path& log, const std::string& needle) {
  std::string body;
  for (int i = 0; i < 200; ++i) {
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const int port = metrics_port(text);
    if (port != 0) body = scrape(port);
    if (body.find(needle) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return body;
}

}  // namespace exactly::test
