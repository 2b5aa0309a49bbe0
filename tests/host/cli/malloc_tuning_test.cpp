// The host's malloc settings (host/util/malloc_tuning.hpp): after a burst of allocations
// on a thread, its arena keeps the heaps it grew instead of handing them back to the
// kernel (which glibc's defaults do, so the next burst maps and faults them in again).
// Each case runs in a child process of its own: malloc's settings are per process.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "util/malloc_tuning.hpp"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Bytes that malloc's arenas hold from the kernel (mmapped blocks not included) and how
// many of them a burst of 192 MiB in 16 KiB blocks on a new thread leaves behind once
// every block is freed. A thread's arena grows in heaps of 64 MiB and never gives back
// its first one; with glibc's defaults it gives back the heap at its top once that is
// free (128 of these 192 MiB are kept here).
size_t kept_after_burst() {
  size_t kept = 0;
  std::thread t([&] {
    std::vector<void*> blocks;
    const size_t before = mallinfo2().arena;
    for (size_t i = 0; i < 192 * kMiB / (16 << 10); ++i) {
      void* p = std::malloc(16 << 10);
      static_cast<char*>(p)[0] = 1;
      blocks.push_back(p);
    }
    for (void* p : blocks) std::free(p);
    const size_t after = mallinfo2().arena;
    kept = after > before ? after - before : 0;
  });
  t.join();
  return kept;
}

// Runs `body` in a child process; its return value is the child's exit code.
int in_child(int (*body)()) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

}  // namespace

TEST(MallocTuning, WithGlibcDefaultsAThreadsArenaHandsItsHeapsBack) {
  // The control: what the tuning is for must be visible to this measurement.
  EXPECT_EQ(in_child([] { return kept_after_burst() < 160 * kMiB ? 0 : 1; }), 0)
      << "glibc kept a thread's heaps without the tuning: this test can no longer tell";
}

TEST(MallocTuning, TheHostsSettingsKeepTheHeapsAThreadGrew) {
  EXPECT_EQ(in_child([] {
              const auto t = exactly::util::keep_freed_memory();
              if (!t.applied) return 2;
              return kept_after_burst() >= 190 * kMiB ? 0 : 1;
            }),
            0);
}

TEST(MallocTuning, AnOperatorsMallocTunablesAreLeftAlone) {
  EXPECT_EQ(in_child([] {
              setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2", 1);
              const auto t = exactly::util::keep_freed_memory();
              if (t.applied) return 1;
              return t.why_not.find("GLIBC_TUNABLES") != std::string::npos ? 0 : 2;
            }),
            0);
}
