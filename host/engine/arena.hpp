#pragma once
// Owns the bytes of records a transform emitted (rewritten or new) until the batch
// has reached the sink. Bump allocation in blocks; reset() keeps the first block.
#include <exactly/plugin_abi.h>

#include <cstring>
#include <memory>
#include <vector>

namespace exactly::engine {

class Arena {
 public:
  void* alloc(size_t n) {
    n = (n + 7) & ~size_t{7};
    if (blocks_.empty() || used_ + n > cap_) {
      size_t cap = n > kBlock ? n : kBlock;
      blocks_.emplace_back(new char[cap]);
      cap_ = cap;
      used_ = 0;
    }
    void* p = blocks_.back().get() + used_;
    used_ += n;
    return p;
  }
  ex_bytes copy(ex_bytes b) {
    if (b.ptr == nullptr) return b;
    auto* p = static_cast<uint8_t*>(alloc(b.len ? b.len : 1));
    if (b.len) std::memcpy(p, b.ptr, b.len);
    return ex_bytes{p, b.len};
  }
  // Deep copy of a record; `extra` headers are appended (dead-letter metadata).
  ex_record copy(const ex_record& r, const std::vector<ex_header>& extra = {}) {
    ex_record o = r;
    o.key = copy(r.key);
    o.value = copy(r.value);
    size_t n = r.header_count + extra.size();
    if (n > 0) {
      auto* hs = static_cast<ex_header*>(alloc(sizeof(ex_header) * n));
      for (uint32_t i = 0; i < r.header_count; ++i)
        hs[i] = ex_header{copy(r.headers[i].key), copy(r.headers[i].value)};
      for (size_t i = 0; i < extra.size(); ++i)
        hs[r.header_count + i] = ex_header{copy(extra[i].key), copy(extra[i].value)};
      o.headers = hs;
    } else {
      o.headers = nullptr;
    }
    o.header_count = static_cast<uint32_t>(n);
    return o;
  }
  void reset() {
    if (blocks_.size() > 1) blocks_.erase(blocks_.begin() + 1, blocks_.end());
    if (!blocks_.empty()) cap_ = kBlock;
    used_ = 0;
  }

 private:
  static constexpr size_t kBlock = 1 << 20;
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t used_ = 0, cap_ = 0;
};

}  // namespace exactly::engine
