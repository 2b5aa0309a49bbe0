// /proc readings shared by the Kafka bench tools: CPU seconds, peak RSS, and a per-
// thread-name breakdown of CPU and run-queue wait.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace exactly_bench {

// utime + stime of the whole process (all threads), in seconds; -1 if it is gone.
inline double cpu_seconds(int pid, const char* tid = nullptr) {
  std::ifstream f("/proc/" + std::to_string(pid) +
                  (tid ? std::string("/task/") + tid : std::string()) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream in(s.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // After "pid (comm) ": field 3 (state) is index 0; utime is field 14, stime 15.
  for (int k = 3; k <= 15 && in >> field; ++k) {
    if (k == 14) utime = std::stoull(field);
    if (k == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Per thread name (digits folded: "GC Thread#3" -> "GC Thread#N"): CPU seconds and
// seconds spent runnable but waiting for a CPU (/proc/.../schedstat), so a report can
// tell a busy main thread from busy client I/O threads, and waiting for the broker from
// waiting for a core on a shared box. Top `keep` by CPU.
inline std::string threads_json(int pid, size_t keep) {
  struct Row {
    std::string name;
    double cpu = 0, runq = 0;
  };
  std::vector<Row> rows;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(task.c_str());
  if (d == nullptr) return "{}";
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream cf(task + "/" + e->d_name + "/comm");
    std::string name;
    std::getline(cf, name);
    std::string folded;
    for (char ch : name) {
      if (ch >= '0' && ch <= '9') {
        if (folded.empty() || folded.back() != 'N') folded += 'N';
      } else if (ch != '"' && ch != '\\') {
        folded += ch;
      }
    }
    const double cpu = cpu_seconds(pid, e->d_name);
    if (cpu < 0) continue;
    std::ifstream sf(task + "/" + e->d_name + "/schedstat");
    unsigned long long on_cpu_ns = 0, runq_ns = 0;
    sf >> on_cpu_ns >> runq_ns;
    auto it = std::find_if(rows.begin(), rows.end(), [&](auto& x) { return x.name == folded; });
    if (it == rows.end()) it = rows.insert(rows.end(), Row{folded});
    it->cpu += cpu;
    it->runq += static_cast<double>(runq_ns) / 1e9;
  }
  ::closedir(d);
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.cpu > b.cpu; });
  std::string out = "{";
  char buf[96];
  for (size_t i = 0; i < rows.size() && i < keep; ++i) {
    std::snprintf(buf, sizeof buf, "{\"cpu_s\":%.2f,\"runq_wait_s\":%.2f}", rows[i].cpu, rows[i].runq);
    out += (i ? ",\"" : "\"") + rows[i].name + "\":" + buf;
  }
  return out + "}";
}

inline long peak_rss_kb(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

}  // namespace exactly_bench
