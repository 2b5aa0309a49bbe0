#pragma once
// Helpers shared by tests: temp dirs, files, and running the real `exactly` binary.
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace exactly::test {

namespace fs = std::filesystem;

// The directories a test binary made: removed when it exits with every test passed,
// kept for a look when one failed (they were left behind either way before: a day of
// runs left 18 GB).
struct TempDirs {
  std::vector<fs::path> made;
  ~TempDirs() {
    if (!::testing::UnitTest::GetInstance()->Passed()) return;
    std::error_code ec;
    for (const auto& d : made) fs::remove_all(d, ec);
  }
};
inline TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

inline fs::path temp_dir(const std::string& tag) {
  fs::path base = fs::temp_directory_path() / "exactly-tests";
  fs::create_directories(base);
  std::string tmpl = (base / (tag + "-XXXXXX")).string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  char* d = mkdtemp(buf.data());
  if (d == nullptr) throw std::runtime_error("mkdtemp failed");
  temp_dirs().made.emplace_back(d);
  return fs::path(d);
}

inline void write_file(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << content;
}

inline std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string line;
  while (std::getline(ss, line)) out.push_back(line);
  return out;
}

// How many times `what` occurs in `text` (overlapping ones counted).
inline int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct RunResult {
  int exit_code = -1;   // -1 when killed by a signal
  int signal = 0;
  std::string out, err;
};

// Runs a command with /bin/sh, capturing stdout and stderr into files.
inline RunResult run(const std::string& cmd, const fs::path& work = {}) {
  fs::path dir = work.empty() ? temp_dir("run") : work;
  fs::path o = dir / "stdout.txt", e = dir / "stderr.txt";
  std::string full = cmd + " >" + o.string() + " 2>" + e.string();
  int rc = std::system(full.c_str());
  RunResult r;
  if (WIFEXITED(rc)) r.exit_code = WEXITSTATUS(rc);
  if (WIFSIGNALED(rc)) r.signal = WTERMSIG(rc);
  r.out = read_file(o);
  r.err = read_file(e);
  return r;
}

inline std::string exactly_bin() { return EXACTLY_BINARY; }

// Polls the file `log` until it holds `text` (true) or `seconds` have passed (false).
inline bool wait_for_text(const fs::path& log, const std::string& text, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_file(log).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return read_file(log).find(text) != std::string::npos;
}

// A child process started with fork/exec (for kill -9 tests).
class Child {
 public:
  Child(const std::vector<std::string>& argv, const fs::path& log) {
    pid_ = fork();
    if (pid_ == 0) {
      FILE* f = std::fopen(log.c_str(), "a");
      if (f) {
        dup2(fileno(f), 1);
        dup2(fileno(f), 2);
      }
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  pid_t pid() const { return pid_; }
  void kill(int sig) { ::kill(pid_, sig); }
  // Returns the exit code, or -signal.
  int wait() {
    int st = 0;
    waitpid(pid_, &st, 0);
    reaped_ = true;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    return -WTERMSIG(st);
  }
  // Non-blocking: true if it has exited.
  bool exited(int* code) {
    int st = 0;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      *code = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
      return true;
    }
    return false;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

}  // namespace exactly::test
