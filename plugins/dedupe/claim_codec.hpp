// On-disk encodings of the dedupe store. Every byte here is paid once per key on
// disk, so values are varints and the claim value leaves out what the store implies
// (the partition: one store per partition).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace exactly::dedupe {

inline char* put_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

inline bool get_varint(const char*& p, const char* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift <= 63 && p < end; shift += 7) {
    uint64_t b = static_cast<uint8_t>(*p++);
    v |= (b & 0x7f) << shift;
    if (b < 0x80) return true;
  }
  return false;
}

inline uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t unzigzag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}
// A claim's offset from its sequence number and stored distance. In wrapping arithmetic:
// the same result as seq + distance for every value a store writes, and defined for
// corrupt bytes too (a signed sum could overflow; found by fuzz_state_codecs).
inline int64_t offset_from(uint64_t seq, uint64_t zigzag_distance) {
  return static_cast<int64_t>(seq + static_cast<uint64_t>(unzigzag(zigzag_distance)));
}

// A claim: the record that first saw an id. The offset is stored as its distance from
// the insertion sequence (seq starts at the store's first offset and both advance
// together), which keeps it to a byte or three instead of four or five. The
// fingerprint's length is whatever bytes remain, so stores written with another
// `fingerprint.bytes` still decode.
struct ClaimValue {
  uint64_t seq = 0;
  int64_t offset = 0;
  uint64_t fingerprint = 0;
  uint32_t fingerprint_bytes = 0;
};

constexpr size_t kMaxClaimValue = 10 + 10 + 8;

inline size_t encode_claim(char* out, uint64_t seq, int64_t offset, uint64_t fp,
                           uint32_t fp_bytes) {
  char* p = put_varint(out, seq);
  p = put_varint(p, zigzag(offset - static_cast<int64_t>(seq)));
  for (uint32_t i = 0; i < fp_bytes; ++i) *p++ = static_cast<char>(fp >> (8 * i));
  return static_cast<size_t>(p - out);
}

inline bool decode_claim_seq(std::string_view v, uint64_t& seq) {
  const char* p = v.data();
  return get_varint(p, v.data() + v.size(), seq);
}

inline bool decode_claim(std::string_view v, ClaimValue& out) {
  const char* p = v.data();
  const char* end = v.data() + v.size();
  uint64_t delta = 0;
  if (!get_varint(p, end, out.seq) || !get_varint(p, end, delta)) return false;
  out.offset = offset_from(out.seq, delta);
  size_t n = static_cast<size_t>(end - p);
  if (n > 8) return false;
  out.fingerprint = 0;
  for (size_t i = 0; i < n; ++i) out.fingerprint |= uint64_t(static_cast<uint8_t>(p[i])) << (8 * i);
  out.fingerprint_bytes = static_cast<uint32_t>(n);
  return true;
}

// Two fingerprints agree on the bytes both have; a side without one never conflicts.
inline bool same_content(uint64_t a, uint32_t a_bytes, uint64_t b, uint32_t b_bytes) {
  uint32_t n = a_bytes < b_bytes ? a_bytes : b_bytes;
  if (n == 0) return true;
  uint64_t mask = n >= 8 ? ~uint64_t{0} : ((uint64_t{1} << (8 * n)) - 1);
  return (a & mask) == (b & mask);
}

// Sequence index ("seq" column family): one entry per round, not per key. Key = the
// round's first sequence number, big-endian so chunks sort oldest first. Value = the
// round's wall-clock time in ms (varint), then, until the round's claims are folded
// into the store's files, the claims themselves in seq order: a byte of
// fingerprint length, then per claim varint key length, key, varint zigzag(offset -
// seq), fingerprint. A chunk covers [its seq, next chunk's seq).
inline std::string seq_key(uint64_t seq) {
  std::string k(8, '\0');
  for (int i = 0; i < 8; ++i) k[i] = static_cast<char>(seq >> (56 - 8 * i));
  return k;
}
inline uint64_t seq_from_key(std::string_view k) {
  uint64_t s = 0;
  for (size_t i = 0; i < 8 && i < k.size(); ++i) s = (s << 8) | static_cast<uint8_t>(k[i]);
  return s;
}

// A chunk's value: varint time (ms), then — until its claims are folded into the claims
// column family — a byte of fingerprint length and the claims (see above). The same
// bytes are the changelog's chunk records.
inline void begin_chunk(std::string& chunk, int64_t ms, uint32_t fp_bytes) {
  char buf[10];
  chunk.append(buf, static_cast<size_t>(put_varint(buf, static_cast<uint64_t>(ms < 0 ? 0 : ms)) - buf));
  chunk.push_back(static_cast<char>(fp_bytes));
}
inline void append_chunk_claim(std::string& chunk, std::string_view key, uint64_t seq,
                               int64_t offset, uint64_t fp, uint32_t fp_bytes) {
  char buf[10];
  chunk.append(buf, static_cast<size_t>(put_varint(buf, key.size()) - buf));
  chunk.append(key.data(), key.size());
  chunk.append(buf, static_cast<size_t>(put_varint(buf, zigzag(offset - static_cast<int64_t>(seq))) - buf));
  for (uint32_t i = 0; i < fp_bytes; ++i) chunk.push_back(static_cast<char>(fp >> (8 * i)));
}

struct ChunkView {
  int64_t ms = -1;
  size_t time_len = 0;    // bytes of the time prefix (a folded chunk is only that)
  bool folded = true;     // no claims follow
  uint32_t fp_bytes = 0;
  const char* claims = nullptr;
  const char* end = nullptr;
};

inline bool parse_chunk(std::string_view v, ChunkView& out) {
  const char* p = v.data();
  const char* end = p + v.size();
  uint64_t ms = 0;
  if (!get_varint(p, end, ms)) return false;
  out.ms = static_cast<int64_t>(ms);
  out.time_len = static_cast<size_t>(p - v.data());
  out.folded = p >= end;
  if (out.folded) return true;
  out.fp_bytes = static_cast<uint8_t>(*p++);
  if (out.fp_bytes > 8) return false;  // a fingerprint is at most 64 bits
  out.claims = p;
  out.end = end;
  return true;
}

// Calls fn(seq, key, offset, fingerprint) for each claim; false if the chunk is cut short.
template <typename Fn>
inline bool for_each_chunk_claim(const ChunkView& c, uint64_t first_seq, Fn&& fn) {
  const char* p = c.claims;
  for (uint64_t seq = first_seq; p != nullptr && p < c.end; ++seq) {
    uint64_t klen = 0, delta = 0;
    if (!get_varint(p, c.end, klen) || static_cast<uint64_t>(c.end - p) < klen) return false;
    std::string_view key(p, klen);
    p += klen;
    if (!get_varint(p, c.end, delta) || static_cast<uint64_t>(c.end - p) < c.fp_bytes) return false;
    uint64_t fp = 0;
    for (uint32_t i = 0; i < c.fp_bytes; ++i) fp |= uint64_t(static_cast<uint8_t>(p[i])) << (8 * i);
    p += c.fp_bytes;
    fn(seq, key, offset_from(seq, delta), fp);
  }
  return true;
}

// Store bookkeeping, under the empty key of the "seq" column family (sorts before every
// chunk, so chunk scans never meet it). Written in every round's WriteBatch, and (all
// but `indexed` and `changelog`, which are local) as the meta record of the changelog.
struct StoreMeta {
  static constexpr uint8_t kVersion = 3;
  uint64_t next_seq = 0;   // sequence number of the next claim
  uint64_t floor = 0;      // claims with seq < floor are evicted (logically at once)
  int64_t high_water = -1; // highest offset whose claims are durable
  uint64_t seek_hint = 0;  // first live chunk: scans start here, never over tombstones
  uint64_t indexed = 0;    // claims below this seq are in the store's folded files
  bool fresh = true;       // no claim yet: the first one sets the sequence base
  int64_t position = -1;   // source position the claims cover (records before it seen)
  int64_t changelog = -1;  // next changelog position to apply; -1 = never restored
  // The label of the newest claims file a fold made (0: none yet, or a meta written
  // before it): a store that lacks it while older files remain lost it (load_own_files).
  uint64_t newest_file = 0;

  std::string encode() const {
    char buf[1 + 8 * 10 + 1];
    char* p = buf;
    *p++ = static_cast<char>(kVersion);
    p = put_varint(p, next_seq);
    p = put_varint(p, floor);
    p = put_varint(p, zigzag(high_water));
    p = put_varint(p, seek_hint);
    p = put_varint(p, indexed);
    *p++ = fresh ? 1 : 0;
    p = put_varint(p, zigzag(position));
    p = put_varint(p, zigzag(changelog));
    // Last and optional: a build before it reads this meta and ignores it.
    if (newest_file != 0) p = put_varint(p, newest_file);
    return std::string(buf, static_cast<size_t>(p - buf));
  }
  // Reads version 2 (before positions and changelogs) and 3.
  bool decode(std::string_view v) {
    if (v.empty()) return false;
    const uint8_t version = static_cast<uint8_t>(v[0]);
    if (version != 2 && version != kVersion) return false;
    const char* p = v.data() + 1;
    const char* end = v.data() + v.size();
    uint64_t hw = 0;
    if (!get_varint(p, end, next_seq) || !get_varint(p, end, floor) ||
        !get_varint(p, end, hw) || !get_varint(p, end, seek_hint) ||
        !get_varint(p, end, indexed) || p >= end)
      return false;
    high_water = unzigzag(hw);
    fresh = *p++ != 0;
    position = changelog = -1;
    newest_file = 0;
    if (version == 2) return true;
    uint64_t pos = 0, cl = 0;
    if (!get_varint(p, end, pos) || !get_varint(p, end, cl)) return false;
    position = unzigzag(pos);
    changelog = unzigzag(cl);
    if (p < end && !get_varint(p, end, newest_file)) return false;
    return true;
  }
};

}  // namespace exactly::dedupe
