#pragma once
// `exactly test`: a case whose transforms have not returned within stage.timeout ends the
// command (code 3) with the case named; a hung plugin would otherwise hang a CI job
// silently.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

namespace exactly::cli {

class CaseWatch {
 public:
  CaseWatch();
  ~CaseWatch();
  CaseWatch(const CaseWatch&) = delete;
  CaseWatch& operator=(const CaseWatch&) = delete;

  // Watches the case `what` for timeout_ms (none when 0); on expiry removes `scratch`
  // and ends the process with code 3.
  void start(std::string what, int64_t timeout_ms, std::filesystem::path scratch);
  // The case has returned.
  void stop();

 private:
  void watch();

  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  uint64_t generation_ = 0;
  int64_t timeout_ms_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  std::string what_;
  std::filesystem::path scratch_;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace exactly::cli
