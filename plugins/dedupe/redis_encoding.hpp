// What one claim costs in Redis (Tapjoy's compact keys): the id as a hash field of at
// most 17 bytes, the owner (partition, offset) in 10 bytes plus the fingerprint, and
// the shard / slice an id belongs to. Every byte here is paid once per id in memory.
#pragma once

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace exactly::dedupe::redis {

// The extractor's store key (UUID -> 16 bytes; ids under 16 bytes as they are; 16 or
// more -> bytes + 0x00) is kept when at most 17 bytes. Longer ids become their 128-bit
// XXH3 hash + 0x01: 17 bytes, never equal to a kept key (those end in 0x00 at 17).
constexpr size_t kMaxField = 17;
inline void field_of(std::string_view store_key, std::string& out) {
  if (store_key.size() <= kMaxField) {
    out.append(store_key);
    return;
  }
  XXH128_hash_t h = XXH3_128bits(store_key.data(), store_key.size());
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  out.append(reinterpret_cast<const char*>(c.digest), sizeof c.digest);
  out.push_back('\x01');
}

// Owner = 4 bytes of the hash of the partition name (stable across hosts and restarts)
// + the offset's low 48 bits, big-endian. Offsets repeat only after 2^48 records of one
// partition, far beyond any window.
constexpr size_t kOwnerBytes = 10;
inline uint32_t partition_tag(std::string_view name) {
  return static_cast<uint32_t>(XXH3_64bits(name.data(), name.size()));
}
inline void append_owner(std::string& out, uint32_t tag, int64_t offset) {
  char b[kOwnerBytes];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(tag >> (24 - 8 * i));
  const uint64_t o = static_cast<uint64_t>(offset);
  for (int i = 0; i < 6; ++i) b[4 + i] = static_cast<char>(o >> (40 - 8 * i));
  out.append(b, kOwnerBytes);
}
inline int64_t owner_offset(std::string_view v) {
  if (v.size() < kOwnerBytes) return -1;
  uint64_t o = 0;
  for (int i = 0; i < 6; ++i) o = (o << 8) | static_cast<uint8_t>(v[4 + i]);
  return static_cast<int64_t>(o);
}
// The claim value: owner, then `fp_bytes` of the content fingerprint, little-endian.
inline void append_fingerprint(std::string& out, uint64_t fp, uint32_t fp_bytes) {
  for (uint32_t i = 0; i < fp_bytes; ++i) out.push_back(static_cast<char>(fp >> (8 * i)));
}
inline uint64_t stored_fingerprint(std::string_view v, uint32_t& bytes) {
  bytes = v.size() > kOwnerBytes ? static_cast<uint32_t>(v.size() - kOwnerBytes) : 0;
  if (bytes > 8) bytes = 8;
  uint64_t fp = 0;
  for (uint32_t i = 0; i < bytes; ++i)
    fp |= static_cast<uint64_t>(static_cast<uint8_t>(v[kOwnerBytes + i])) << (8 * i);
  return fp;
}

// Jump consistent hash (Lamping & Veach, 2014): growing n shards to n+1 moves only 1/(n+1)
// of the ids, and the result depends only on the id and n, so every host agrees.
inline int32_t jump_hash(uint64_t key, int32_t buckets) {
  int64_t b = -1, j = 0;
  while (j < buckets) {
    b = j;
    key = key * 2862933555777941757ULL + 1;
    j = static_cast<int64_t>((b + 1) * (static_cast<double>(1LL << 31) /
                                        static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<int32_t>(b);
}

// Two independent hashes of the field: one picks the shard, the other the slice, so the
// slices of one shard stay evenly filled whatever the shard count.
inline uint64_t shard_hash(std::string_view field) {
  return XXH3_64bits_withSeed(field.data(), field.size(), 0x5eed5eedULL);
}
inline uint64_t slice_hash(std::string_view field) {
  return XXH3_64bits_withSeed(field.data(), field.size(), 0x511ce5ULL);
}

}  // namespace exactly::dedupe::redis
