// An allocator for the stage's large in-memory tables (claim tables, their key arenas,
// the presence filter, a fold's sort entries). They are read at random, tens to hundreds
// of MiB, so with 4 KiB pages nearly every probe is also a TLB miss: a page walk that a
// prefetch cannot hide (a profile of the fold showed most of its own time stalled on
// prefetches). Blocks of 2 MiB and more are aligned to 2 MiB and offered to the kernel
// as transparent huge pages (madvise; Debian's default THP mode is "madvise"). Where the
// kernel declines, they stay ordinary pages: only speed depends on it.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace exactly::dedupe {

inline void* huge_page_alloc(size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  if (bytes < kHuge) {
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = nullptr;
  if (posix_memalign(&p, kHuge, rounded) != 0) throw std::bad_alloc();
  (void)madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() noexcept = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(huge_page_alloc(n * sizeof(T))); }
  void deallocate(T* p, size_t) noexcept { std::free(p); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const noexcept { return true; }
  template <typename U>
  bool operator!=(const HugePageAllocator<U>&) const noexcept { return false; }
};

template <typename T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;
using HugeString = std::basic_string<char, std::char_traits<char>, HugePageAllocator<char>>;

}  // namespace exactly::dedupe
