#include "cli/case_watch.hpp"

#include <cstdio>
#include <cstdlib>

namespace exactly::cli {

CaseWatch::CaseWatch() : thread_([this] { watch(); }) {}

CaseWatch::~CaseWatch() {
  {
    std::lock_guard<std::mutex> g(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CaseWatch::start(std::string what, int64_t timeout_ms, std::filesystem::path scratch) {
  std::lock_guard<std::mutex> g(mu_);
  what_ = std::move(what);
  scratch_ = std::move(scratch);
  timeout_ms_ = timeout_ms;
  deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  ++generation_;
  cv_.notify_all();
}

void CaseWatch::stop() {
  std::lock_guard<std::mutex> g(mu_);
  timeout_ms_ = 0;
  ++generation_;
  cv_.notify_all();
}

void CaseWatch::watch() {
  std::unique_lock<std::mutex> l(mu_);
  while (!done_) {
    if (timeout_ms_ <= 0) {
      cv_.wait(l);
      continue;
    }
    const uint64_t gen = generation_;
    if (cv_.wait_until(l, deadline_, [&] { return done_ || generation_ != gen; })) continue;
    std::fprintf(stdout,
                 "TIMEOUT %s: the transforms have not returned within stage.timeout (%lld ms): a "
                 "plugin call is stuck; stopping\n",
                 what_.c_str(), static_cast<long long>(timeout_ms_));
    std::error_code ec;
    std::filesystem::remove_all(scratch_, ec);
    std::fflush(nullptr);
    std::_Exit(3);
  }
}

}  // namespace exactly::cli
