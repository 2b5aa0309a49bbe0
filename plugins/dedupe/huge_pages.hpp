// An allocator for the stage's large in-memory tables (claim tables, their key arenas,
// the presence filter, a fold's sort entries). They are read at random, tens to hundreds
// of MiB, so with 4 KiB pages nearly every probe is also a TLB miss: a page walk that a
// prefetch cannot hide (a profile of the fold showed most of its own time stalled on
// prefetches). Blocks of 2 MiB and more are aligned to 2 MiB and offered to the kernel
// as transparent huge pages (madvise; Debian's default THP mode is "madvise"). Where the
// kernel declines, they stay ordinary pages: only speed depends on it.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels refuse it (EINVAL): only speed depends on it
#endif

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

// A growable array of trivially copyable values in its own anonymous mapping, for the
// claim tables that fill to hundreds of MiB. A std::vector grows by allocating twice the
// size, copying, and freeing the old block; glibc returns blocks this large to the
// kernel, so every growth zeroes and faults in fresh pages again (in this VM class the
// page faults of one table's growth took a fifth of the pipeline thread). Here growth is
// mremap: the pages already filled move with their contents, nothing is copied, and only
// the new tail is faulted in, once. Memory stays mapped across clear() for the next fill.
// Faults in a range's pages (as writes would, without writing): on a background
// thread, so that the thread that fills the range later does not stall on the faults.
// Safe while another thread uses or remaps the range (the kernel serialises the faults;
// contents are never changed; a range unmapped meanwhile is refused, harmlessly).
// In 2 MiB steps: the call holds the process's mmap lock, and a whole table at once
// (~100 MiB of fresh pages, a quarter second here) held every mmap, munmap and large
// malloc of the pipeline thread behind it. And at the caller's normal priority, never
// from a thread at nice 10 or SCHED_IDLE: such a thread keeps the lock while it waits
// for a core, and on a busy machine that is long. At nice 10 a step took 55 ms on
// average (up to 115) at 245k records/s on 2 vCPUs, and the pipeline thread's mmap and
// mprotect calls, and behind them librdkafka's page faults, waited up to 220 ms for it
// (bpftrace of the D-state waits; docs/benchmarks.md, "The address-space lock").
inline void populate_range(std::pair<void*, size_t> r) {
  constexpr size_t kStep = size_t{2} << 20;
  char* p = static_cast<char*>(r.first);
  for (size_t done = 0; p != nullptr && done < r.second; done += kStep)
    if (madvise(p + done, std::min(kStep, r.second - done), MADV_POPULATE_WRITE) != 0) return;
}

template <typename T>
class MappedArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  MappedArray() = default;
  MappedArray(const MappedArray&) = delete;
  MappedArray& operator=(const MappedArray&) = delete;
  MappedArray(MappedArray&& o) noexcept { swap(o); }
  MappedArray& operator=(MappedArray&& o) noexcept {
    MappedArray(std::move(o)).swap(*this);
    return *this;
  }
  ~MappedArray() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  void swap(MappedArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(bytes_, o.bytes_);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return bytes_ / sizeof(T); }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

  void push_back(const T& v) {
    if (size_ == capacity()) reserve(size_ + 1);
    data_[size_++] = v;
  }
  void append(const T* p, size_t n) {
    if (n == 0) return;
    if (size_ + n > capacity()) reserve(size_ + n);
    std::memcpy(data_ + size_, p, n * sizeof(T));
    size_ += n;
  }
  // n values, all zero (fresh pages are the kernel's zeros: no pass over them here).
  void assign_zeros(size_t n) {
    if (n > capacity()) {
      MappedArray fresh;  // mapped first: a failure leaves this array as it was
      fresh.map(n);
      swap(fresh);
    } else {
      std::memset(data_, 0, n * sizeof(T));
    }
    size_ = n;
  }
  void clear() { size_ = 0; }
  void shrink_to(size_t n) {
    if (n < size_) size_ = n;
  }
  void release() {
    if (data_ != nullptr) munmap(data_, bytes_);
    data_ = nullptr;
    size_ = bytes_ = 0;
  }
  // The mapped range, for populate_range() on another thread.
  std::pair<void*, size_t> range() const { return {data_, bytes_}; }

  // Room for at least n values; at least doubles, so push_back stays amortised O(1).
  void reserve(size_t n) { grow_to(n, true); }
  // Room for n values and not much more (a size known ahead: no doubling slack, which
  // populate_range would make resident).
  void reserve_exact(size_t n) { grow_to(n, false); }

 private:
  void grow_to(size_t n, bool doubling) {
    if (n <= capacity()) return;
    if (data_ == nullptr) return map(std::max(n, kMinBytes / sizeof(T)));
    size_t want = round_up(doubling ? std::max(n * sizeof(T), 2 * bytes_) : n * sizeof(T));
    void* p = mremap(data_, bytes_, want, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
    bytes_ = want;
    advise();
  }

  static constexpr size_t kMinBytes = size_t{64} << 10;
  static constexpr size_t kHuge = size_t{2} << 20;
  static size_t round_up(size_t b) {
    const size_t unit = b >= kHuge ? kHuge : 4096;
    return (b + unit - 1) / unit * unit;
  }
  void map(size_t n) {
    const size_t want = round_up(std::max(n * sizeof(T), size_t{4096}));
    void* p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
    bytes_ = want;
    advise();
  }
  void advise() {
    if (bytes_ >= kHuge) (void)madvise(data_, bytes_, MADV_HUGEPAGE);
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t bytes_ = 0;
};

}  // namespace exactly::dedupe
