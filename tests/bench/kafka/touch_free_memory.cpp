// bench_touch_free_memory: writes one byte into every page of most of the machine's free
// memory, then gives it back (run_bench.sh --vm-memory keep).
//
// With the VM's free page reporting switched off, one pass over the free memory makes
// the host back all of it once, before any case is measured: why that matters is under
// --vm-memory in run_bench.sh and in docs/benchmarks.md, "The broker's writes into memory
// the VM gave back".
//
//   bench_touch_free_memory [--leave-mib 1024]
//
// stdout: {"touched_mib":..,"seconds":..}
#include "bench_cli.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

namespace {

constexpr const char* kTool = "bench_touch_free_memory";

// MemFree from /proc/meminfo, in KiB.
int64_t free_kib() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  int64_t value = 0;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemFree:") return value;
  }
  exactly_bench::die(kTool, "no MemFree in /proc/meminfo");
}

}  // namespace

int main(int argc, char** argv) {
  int64_t leave_mib = 1024;  // for the kernel and everything already running
  exactly_bench::each_option(kTool, argc, argv, [&](std::string_view k, const char* v) {
    if (k != "--leave-mib") return false;
    leave_mib = std::atoll(v);
    return true;
  });
  if (leave_mib < 0) exactly_bench::die(kTool, "--leave-mib must be >= 0");
  const int64_t mib = free_kib() / 1024 - leave_mib;
  if (mib <= 0) {
    std::printf("{\"touched_mib\":0,\"seconds\":0}\n");
    return 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const size_t bytes = static_cast<size_t>(mib) << 20;
  // MAP_NORESERVE: the kernel's overcommit heuristic must not refuse what is free.
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) exactly_bench::die(kTool, "cannot map " + std::to_string(mib) + " MiB");
  const long page = sysconf(_SC_PAGESIZE);
  auto* base = static_cast<volatile char*>(p);
  for (size_t off = 0; off < bytes; off += static_cast<size_t>(page)) base[off] = 1;
  munmap(p, bytes);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"touched_mib\":%lld,\"seconds\":%.1f}\n", static_cast<long long>(mib), secs);
  return 0;
}
