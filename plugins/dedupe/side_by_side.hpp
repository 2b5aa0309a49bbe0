#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <system_error>
#include <thread>
#include <vector>

namespace exactly::dedupe {

// Runs job(0) .. job(n - 1) on up to `threads` threads, the caller's among them, and
// returns once every job has returned. Jobs must not throw and must not touch each
// other's data. For work that waits more than it computes (a store's open is mostly
// fsyncs), so `threads` may exceed the cores.
template <class Job>
void run_side_by_side(size_t n, size_t threads, const Job& job) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) job(i);
  };
  const size_t extra = std::min(threads, n) > 1 ? std::min(threads, n) - 1 : 0;
  std::vector<std::thread> pool;
  pool.reserve(extra);
  for (size_t t = 0; t < extra; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running (and this one) take the rest
    }
  }
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace exactly::dedupe
