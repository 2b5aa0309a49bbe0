#include "util/malloc_tuning.hpp"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace exactly::util {

MallocTuning keep_freed_memory() {
  MallocTuning t;
  if (const char* env = std::getenv("GLIBC_TUNABLES"); env != nullptr && std::strstr(env, "glibc.malloc.") != nullptr) {
    t.why_not = "GLIBC_TUNABLES sets glibc.malloc tunables";
    return t;
  }
  constexpr int kMiB = 1 << 20;
  // The mmap threshold first: each of these calls stops glibc's sliding thresholds, and
  // a pad without it would leave every block from 128 KiB up to a mapping of its own.
  const bool ok = mallopt(M_MMAP_THRESHOLD, 32 * kMiB) == 1 && mallopt(M_TOP_PAD, 64 * kMiB) == 1 &&
                  mallopt(M_TRIM_THRESHOLD, 128 * kMiB) == 1;
  t.applied = ok;
  if (!ok) t.why_not = "mallopt refused a value";
  return t;
}

}  // namespace exactly::util
