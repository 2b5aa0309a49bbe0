// A fast HTTP/1.1 keep-alive server for the http sink benchmark, so that the numbers
// measure the sink and not the server: one epoll thread, every request answered 200
// with a tiny body, after --delay-ms if given (a slow API; the delay is the same for all,
// so due answers are a FIFO). GET /stats answers {"count":N,"first":t,"last":t} (arrival
// times, seconds since the epoch, of the first and last counted request), not counted.
//   bench_http_server --port-file F [--port 0] [--delay-ms 0]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <unordered_map>

namespace {

using Clock = std::chrono::steady_clock;
const char kOk[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}";

struct Conn {
  std::string in, out;
};
struct Due {
  Clock::time_point at;
  int fd;
};

double wall() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void flush(int fd, Conn& c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n <= 0) return;  // EAGAIN: the rest goes with the next answer
    c.out.erase(0, static_cast<size_t>(n));
  }
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  double delay_ms = 0;
  std::string port_file;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--port") port = std::atoi(argv[i + 1]);
    else if (a == "--delay-ms") delay_ms = std::atof(argv[i + 1]);
    else if (a == "--port-file") port_file = argv[i + 1];
  }
  if (port_file.empty()) {
    std::fprintf(stderr, "usage: %s --port-file F [--port P] [--delay-ms D]\n", argv[0]);
    return 2;
  }
  int ls = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(ls, 1024) != 0) {
    std::perror("bind/listen");
    return 1;
  }
  socklen_t len = sizeof(addr);
  getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len);
  {
    std::string tmp = port_file + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    std::fprintf(f, "%d", ntohs(addr.sin_port));
    std::fclose(f);
    std::rename(tmp.c_str(), port_file.c_str());
  }
  int ep = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = ls;
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  std::unordered_map<int, Conn> conns;
  std::deque<Due> due;
  const auto delay = std::chrono::microseconds(static_cast<int64_t>(delay_ms * 1000));
  long long count = 0;
  double first = 0, last = 0;
  epoll_event events[256];
  char buf[65536];
  for (;;) {
    int timeout = -1;
    if (!due.empty()) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(due.front().at - Clock::now()).count();
      timeout = ms < 0 ? 0 : static_cast<int>(ms) + 1;
    }
    int n = epoll_wait(ep, events, 256, timeout);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == ls) {
        int c;
        while ((c = ::accept4(ls, nullptr, nullptr, SOCK_NONBLOCK)) >= 0) {
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          epoll_event cev{};
          cev.events = EPOLLIN;
          cev.data.fd = c;
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
          conns[c];
        }
        continue;
      }
      Conn& c = conns[fd];
      ssize_t r;
      bool closed = false;
      while ((r = ::recv(fd, buf, sizeof(buf), 0)) > 0) c.in.append(buf, static_cast<size_t>(r));
      if (r == 0) closed = true;
      // Every complete request in the buffer.
      for (;;) {
        size_t end = c.in.find("\r\n\r\n");
        if (end == std::string::npos) break;
        size_t body = 0;
        for (const char* h : {"Content-Length:", "content-length:"}) {
          size_t p = c.in.find(h);
          if (p != std::string::npos && p < end) body = std::strtoul(c.in.c_str() + p + 15, nullptr, 10);
        }
        if (c.in.size() < end + 4 + body) break;
        bool stats = c.in.compare(0, 10, "GET /stats") == 0;
        c.in.erase(0, end + 4 + body);
        if (stats) {
          char js[128];
          int jl = std::snprintf(js, sizeof(js), "{\"count\":%lld,\"first\":%.6f,\"last\":%.6f}", count, first, last);
          c.out += "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(jl) + "\r\n\r\n" + std::string(js, jl);
          continue;
        }
        double t = wall();
        if (count++ == 0) first = t;
        last = t;
        if (delay.count() > 0)
          due.push_back({Clock::now() + delay, fd});
        else
          c.out += kOk;
      }
      flush(fd, c);
      if (closed) {
        epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
        ::close(fd);
        conns.erase(fd);
      }
    }
    auto now = Clock::now();
    while (!due.empty() && due.front().at <= now) {
      auto it = conns.find(due.front().fd);
      if (it != conns.end()) {
        it->second.out += kOk;
        flush(it->first, it->second);
      }
      due.pop_front();
    }
  }
}
