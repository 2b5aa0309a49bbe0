#include "record_maker.hpp"

#include <cmath>
#include <cstring>
#include <string>

namespace exactly::generator {
namespace {

// splitmix64's finaliser: cheap and avalanches well, which is all that per-position
// determinism needs (no generator state to carry across rewinds).
inline uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

enum Stream : uint64_t {
  kStreamDup = 1,
  kStreamDupKind = 2,
  kStreamDupDistance = 3,
  kStreamIdHi = 4,
  kStreamIdLo = 5,
  kStreamPayload = 6
};

// Duplicates that land this close to their original usually fall in the same commit
// round; the rest reach far back. Fixed (not batch.size) so records stay a function of
// the seed alone.
constexpr uint64_t kRecentWindow = 100;

constexpr char kHex[] = "0123456789abcdef";
// 64 JSON-safe characters: no quote, no backslash, so the payload needs no escaping.
constexpr char kPayloadChars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr char kHead[] = "{\"messageId\":\"";
constexpr char kSeq[] = "\",\"seq\":";
constexpr char kPayload[] = ",\"payload\":\"";
constexpr char kTail[] = "\"}";
constexpr size_t len(const char* s) { return std::char_traits<char>::length(s); }
static_assert(len(kHead) == RecordMaker::kIdOffset);

char* write_uuid(uint64_t hi, uint64_t lo, char* out) {
  uint8_t b[16];
  for (int i = 0; i < 8; ++i) {
    b[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
    b[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
  }
  b[6] = static_cast<uint8_t>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<uint8_t>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *out++ = '-';
    *out++ = kHex[b[i] >> 4];
    *out++ = kHex[b[i] & 0x0f];
  }
  return out;
}

char* write_u64(uint64_t v, char* out) {
  char tmp[20];
  int n = 0;
  do {
    tmp[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) *out++ = tmp[--n];
  return out;
}

}  // namespace

RecordMaker::RecordMaker(const RecordParams& p) : p_(p), key_(mix(p.seed)) {
  if (p_.partitions == 0) p_.partitions = 1;
  double r = p_.duplicate_ratio;
  if (!(r > 0)) {
    dup_threshold_ = 0;
  } else if (r >= 1) {
    dup_threshold_ = UINT64_MAX;
  } else {
    dup_threshold_ = static_cast<uint64_t>(std::ldexp(r, 64));
  }
}

uint64_t RecordMaker::hash(uint64_t index, uint64_t stream) const {
  return mix(key_ ^ mix(index * 8 + stream));
}

bool RecordMaker::is_duplicate(uint64_t index) const {
  // The first record of each partition has nothing earlier to repeat.
  return index >= p_.partitions && hash(index, kStreamDup) < dup_threshold_;
}

uint64_t RecordMaker::pick_earlier(uint64_t index) const {
  uint64_t earlier = index / p_.partitions;  // same-partition records before this one
  uint64_t span = (hash(index, kStreamDupKind) & 1) != 0 && earlier > kRecentWindow ? kRecentWindow
                                                                             : earlier;
  uint64_t back = 1 + hash(index, kStreamDupDistance) % span;
  return index - back * p_.partitions;
}

uint64_t RecordMaker::origin_of(uint64_t index) const {
  // A duplicate may pick another duplicate; follow the chain to its original. Each step
  // continues with probability duplicate_ratio and always moves backwards.
  while (is_duplicate(index)) index = pick_earlier(index);
  return index;
}

size_t RecordMaker::max_value_size() const {
  return len(kHead) + kIdLength + len(kSeq) + 20 + len(kPayload) + p_.payload_bytes + len(kTail);
}

size_t RecordMaker::write_value(uint64_t origin, char* dst) const {
  char* out = dst;
  std::memcpy(out, kHead, len(kHead));
  out += len(kHead);
  out = write_uuid(hash(origin, kStreamIdHi), hash(origin, kStreamIdLo), out);
  std::memcpy(out, kSeq, len(kSeq));
  out += len(kSeq);
  out = write_u64(origin, out);
  std::memcpy(out, kPayload, len(kPayload));
  out += len(kPayload);
  uint64_t state = hash(origin, kStreamPayload);
  size_t left = p_.payload_bytes;
  while (left > 0) {
    uint64_t r = mix(state++);
    size_t n = left < 10 ? left : 10;  // 10 x 6 bits per 64-bit draw
    for (size_t k = 0; k < n; ++k, r >>= 6) *out++ = kPayloadChars[r & 63];
    left -= n;
  }
  std::memcpy(out, kTail, len(kTail));
  out += len(kTail);
  return static_cast<size_t>(out - dst);
}

}  // namespace exactly::generator
