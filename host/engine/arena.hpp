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
  // Deep copy of a record; `extra` headers (dead-letter metadata) are added after the
  // record's own; with `replacing`, the record's
  // headers of the same names are left out (a dead letter that fails again carries the
  // new failure's exactly.* headers, not two of each: QA).
  ex_record copy(const ex_record& r, const std::vector<ex_header>& extra = {}, bool replacing = false) {
    ex_record o = r;
    o.key = copy(r.key);
    o.value = copy(r.value);
    auto replaced = [&](const ex_bytes& key) {
      if (!replacing) return false;
      for (const auto& e : extra)
        if (e.key.len == key.len && (key.len == 0 || std::memcmp(e.key.ptr, key.ptr, key.len) == 0)) return true;
      return false;
    };
    size_t n = r.header_count + extra.size();
    if (n > 0) {
      auto* hs = static_cast<ex_header*>(alloc(sizeof(ex_header) * n));
      size_t k = 0;
      for (uint32_t i = 0; i < r.header_count; ++i)
        if (!replaced(r.headers[i].key)) hs[k++] = ex_header{copy(r.headers[i].key), copy(r.headers[i].value)};
      for (const auto& e : extra) hs[k++] = ex_header{copy(e.key), copy(e.value)};
      o.headers = hs;
      n = k;
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
