#include "claims_file.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <exactly/durable_file.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace exactly::dedupe {
namespace {

constexpr uint64_t kMagic = 0x314d49414c435845ull;  // "EXCLAIM1"
constexpr uint32_t kVersion = 1;
constexpr unsigned kFilterBitsPerKey = 10;
constexpr unsigned kFilterProbes = 6;
// Directory buckets hold 16-32 entries: 0.25-0.5 bytes per key, and a lookup that
// passes the filter scans under a kilobyte of one bucket.
constexpr uint64_t kBucketEntries = 16;

// Footer field positions.
enum : size_t {
  kMagicAt = 0,
  kVersionAt = 8,
  kKeyWidthAt = 12,
  kWidthsAt = 16,  // seq, dist, fp bytes, dir_bits: one byte each
  kProbesAt = 20,
  kClaimsAt = 24,
  kSeqBaseAt = 32,
  kSeqEndAt = 40,
  kEntriesBytesAt = 48,
  kDirAt = 56,
  kFilterAt = 64,
  kFilterBlocksAt = 72,
  kDistBaseAt = 80,
  kChecksumAt = 112,
  kTailMagicAt = 120,
};
static_assert(kTailMagicAt + 8 == ClaimsFile::kFooterBytes);

void put64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
void put32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
uint64_t get64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t get32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
void put_le(char* p, uint64_t v, uint32_t width) {
  for (uint32_t i = 0; i < width; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint64_t get_le(const char* p, uint32_t width) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < width; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
uint32_t width_of(uint64_t max) {
  uint32_t w = 0;
  while (w < 8 && (max >> (8 * w)) != 0) ++w;
  return w;
}
uint64_t align(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

uint64_t filter_block_index(uint64_t hash, uint64_t blocks) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(hash >> 32) * blocks) >> 32);
}
// Bits from a remix of the hash, so that a key the store's presence filter (the same
// hash) lets through by chance is not let through here for the same reason.
template <typename F>
void for_each_filter_bit(uint64_t hash, F&& f) {
  const uint64_t h = hash * 0x9E3779B97F4A7C15ull;
  const uint32_t a = static_cast<uint32_t>(h >> 32);
  const uint32_t b = static_cast<uint32_t>(h) | 1u;
  for (unsigned i = 0; i < kFilterProbes; ++i) f((a + i * b) & 511u);
}

// Sequential output with the running checksum; the file is written under `tmp` and
// renamed once synced.
class Output {
 public:
  explicit Output(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
    XXH3_64bits_reset(&sum_);
  }
  ~Output() {
    if (fd_ >= 0) ::close(fd_);
    if (!done_) ::unlink(tmp_.c_str());
  }
  bool open(std::string& error) {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) return fail("cannot create", error);
    buf_.reset(new char[kBuf]);
    return true;
  }
  // Room for n bytes in the buffer (n <= kBuf), flushed first if needed.
  char* room(size_t n, std::string& error) {
    if (used_ + n > kBuf && !flush(error)) return nullptr;
    return buf_.get() + used_;
  }
  void commit(size_t n) {
    used_ += n;
    written_ += n;
  }
  bool write(const char* p, size_t n, std::string& error) {
    while (n > 0) {
      size_t k = std::min(n, kBuf);
      char* dst = room(k, error);
      if (dst == nullptr) return false;
      std::memcpy(dst, p, k);
      commit(k);
      p += k;
      n -= k;
    }
    return true;
  }
  bool zeros(size_t n, std::string& error) {
    static const char kZeros[64] = {};
    while (n > 0) {
      size_t k = std::min(n, sizeof(kZeros));
      if (!write(kZeros, k, error)) return false;
      n -= k;
    }
    return true;
  }
  uint64_t written() const { return written_; }
  uint64_t checksum(std::string& error, bool& ok) {
    ok = flush(error);
    return XXH3_64bits_digest(&sum_);
  }
  // Writes the last bytes (not checksummed), syncs, renames, syncs the directory.
  bool finish(const char* tail, size_t n, std::string& error) {
    if (!write(tail, n, error)) return false;
    hashing_ = false;
    if (!flush(error)) return false;
    if (::fdatasync(fd_) != 0) return fail("cannot sync", error);
    if (::close(fd_) != 0) {
      fd_ = -1;
      return fail("cannot close", error);
    }
    fd_ = -1;
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) return fail("cannot rename into place", error);
    done_ = true;
    sdk::Status st = sdk::sync_parent_directory(path_);
    if (!st) error = "claims file " + path_ + ": " + st.message();
    return st.is_ok();
  }

 private:
  static constexpr size_t kBuf = size_t{1} << 20;
  bool flush(std::string& error) {
    if (hashing_) XXH3_64bits_update(&sum_, buf_.get(), used_);
    const char* p = buf_.get();
    size_t n = used_;
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return fail("cannot write", error);
      p += w;
      n -= static_cast<size_t>(w);
    }
    used_ = 0;
    return true;
  }
  bool fail(const char* what, std::string& error) {
    error = std::string("claims file ") + tmp_ + ": " + what + ": " + std::strerror(errno);
    return false;
  }

  std::string path_, tmp_;
  int fd_ = -1;
  std::unique_ptr<char[]> buf_;
  size_t used_ = 0;
  uint64_t written_ = 0;
  bool hashing_ = true, done_ = false;
  XXH3_state_t sum_;
};

struct Entry {
  uint64_t hash;
  uint32_t index;
  uint32_t key_low;  // low 32 bits of where the key lives, for its prefetch
};

}  // namespace

std::string claims_file_path(const std::string& dir, uint64_t seq_end) {
  return dir + "/claims-" + std::to_string(seq_end) + ".xc";
}

ClaimsFileName parse_claims_file_name(std::string_view name, uint64_t& seq_end) {
  constexpr std::string_view kPrefix = "claims-", kSuffix = ".xc", kTmp = ".tmp";
  if (!name.starts_with(kPrefix)) return ClaimsFileName::other;
  name.remove_prefix(kPrefix.size());
  const bool tmp = name.ends_with(kTmp);
  if (tmp) name.remove_suffix(kTmp.size());
  if (!name.ends_with(kSuffix)) return ClaimsFileName::other;
  name.remove_suffix(kSuffix.size());
  if (name.empty() || name.size() > 19 || name.find_first_not_of("0123456789") != std::string_view::npos)
    return ClaimsFileName::other;
  seq_end = std::stoull(std::string(name));
  return tmp ? ClaimsFileName::unfinished : ClaimsFileName::whole;
}

bool write_claims_file(const std::string& path, const RoundClaims& table,
                       const std::vector<uint32_t>& live, uint32_t fp_bytes, uint64_t seq_end,
                       ClaimsFileStats& stats, std::string& error,
                       const std::function<void(double)>& pace) {
  if (fp_bytes > 8) {
    error = "claims file " + path + ": fingerprint of " + std::to_string(fp_bytes) + " bytes";
    return false;
  }
  const auto& claims = table.claims();
  const uint64_t n = live.size();
  // Widths: one pass over the claims in table order (sequential).
  // The owner's distance from the sequence number, relative to the file's smallest:
  // both grow over a store's life (duplicates since it began), their spread within one
  // fold does not. Wrapping arithmetic, like offset_from.
  auto distance = [](const RoundClaims::Claim& c) { return static_cast<int64_t>(static_cast<uint64_t>(c.offset) - c.seq); };
  uint64_t seq_base = UINT64_MAX, seq_max = 0;
  int64_t dist_min = INT64_MAX, dist_max = INT64_MIN;
  size_t key_len = n ? claims[live[0]].key_len : 0;
  bool same_len = true;
  for (uint32_t i : live) {
    const auto& c = claims[i];
    seq_base = std::min(seq_base, c.seq);
    seq_max = std::max(seq_max, c.seq);
    dist_min = std::min(dist_min, distance(c));
    dist_max = std::max(dist_max, distance(c));
    same_len = same_len && c.key_len == key_len;
  }
  if (n == 0) seq_base = 0, dist_min = dist_max = 0;
  if (n && seq_max >= seq_end) {
    error = "claims file " + path + ": a claim's sequence number " + std::to_string(seq_max) +
            " is not below the file's end " + std::to_string(seq_end);
    return false;
  }
  const uint32_t key_width = same_len && key_len > 0 ? static_cast<uint32_t>(key_len) : 0;
  const uint32_t seq_bytes = width_of(n ? seq_max - seq_base : 0);
  const uint32_t dist_bytes = width_of(static_cast<uint64_t>(dist_max) - static_cast<uint64_t>(dist_min));
  const uint32_t value_width = seq_bytes + dist_bytes + fp_bytes;

  uint32_t dir_bits = 0;
  while (dir_bits < 32 && (n >> (dir_bits + 1)) >= kBucketEntries) ++dir_bits;
  const uint64_t buckets = uint64_t{1} << dir_bits;
  auto bucket_of = [&](uint64_t h) { return dir_bits ? h >> (64 - dir_bits) : 0; };

  // Hash order: count per bucket, scatter, then sort each (small) bucket.
  std::vector<uint64_t> start(buckets + 1, 0);
  for (uint32_t i : live) ++start[bucket_of(claims[i].hash) + 1];
  for (uint64_t b = 0; b < buckets; ++b) start[b + 1] += start[b];
  std::vector<Entry> order(n);
  {
    std::vector<uint64_t> next(start.begin(), start.end() - 1);
    for (uint32_t i : live) {
      const auto& c = claims[i];
      order[next[bucket_of(c.hash)]++] = {c.hash, i, static_cast<uint32_t>(c.key_pos)};
    }
  }
  for (uint64_t b = 0; b < buckets; ++b)
    std::sort(order.begin() + static_cast<ptrdiff_t>(start[b]),
              order.begin() + static_cast<ptrdiff_t>(start[b + 1]),
              [](const Entry& x, const Entry& y) { return x.hash < y.hash; });

  const uint64_t filter_blocks = std::max<uint64_t>(1, (n * kFilterBitsPerKey + 511) / 512);
  std::vector<uint64_t> filter(filter_blocks * 8, 0);
  std::vector<uint64_t> dir(buckets + 1, 0);

  Output out(path);
  if (!out.open(error)) return false;
  constexpr size_t kAhead = 16;
  const char* arena = table.arena_data();
  auto fetch = [&](size_t j) {
    __builtin_prefetch(&claims[order[j].index]);
    __builtin_prefetch(reinterpret_cast<const char*>(&claims[order[j].index]) + sizeof(RoundClaims::Claim) - 1);
    __builtin_prefetch(arena + order[j].key_low);
  };
  for (size_t j = 0; j < kAhead && j < n; ++j) fetch(j);
  uint64_t next_bucket = 0;
  for (size_t j = 0; j < n; ++j) {
    if (j + kAhead < n) fetch(j + kAhead);
    if (pace && (j & 8191) == 0) pace(static_cast<double>(j) / static_cast<double>(n));
    const auto& c = claims[order[j].index];
    const uint64_t b = bucket_of(c.hash);
    while (next_bucket <= b) dir[next_bucket++] = out.written();
    uint64_t* block = filter.data() + 8 * filter_block_index(c.hash, filter_blocks);
    for_each_filter_bit(c.hash, [&](unsigned bit) { block[bit >> 6] |= uint64_t{1} << (bit & 63); });
    const std::string_view key = table.key_of(c);
    // Keys are at most 2^17 bytes (RoundClaims::Claim::key_len): always within the buffer.
    char* p = out.room(10 + key.size() + value_width, error);
    if (p == nullptr) return false;
    char* q = p;
    if (!key_width) q = put_varint(q, key.size());
    std::memcpy(q, key.data(), key.size());
    q += key.size();
    put_le(q, c.seq - seq_base, seq_bytes);
    put_le(q + seq_bytes, static_cast<uint64_t>(distance(c)) - static_cast<uint64_t>(dist_min), dist_bytes);
    put_le(q + seq_bytes + dist_bytes, c.fingerprint, fp_bytes);
    q += value_width;
    out.commit(static_cast<size_t>(q - p));
  }
  const uint64_t entries_bytes = out.written();
  while (next_bucket <= buckets) dir[next_bucket++] = entries_bytes;

  const uint64_t dir_at = align(entries_bytes, 8);
  if (!out.zeros(dir_at - entries_bytes, error) ||
      !out.write(reinterpret_cast<const char*>(dir.data()), dir.size() * 8, error))
    return false;
  const uint64_t filter_at = align(out.written(), 64);
  if (!out.zeros(filter_at - out.written(), error) ||
      !out.write(reinterpret_cast<const char*>(filter.data()), filter.size() * 8, error))
    return false;

  char footer[ClaimsFile::kFooterBytes] = {};
  put64(footer + kMagicAt, kMagic);
  put32(footer + kVersionAt, kVersion);
  put32(footer + kKeyWidthAt, key_width);
  footer[kWidthsAt] = static_cast<char>(seq_bytes);
  footer[kWidthsAt + 1] = static_cast<char>(dist_bytes);
  footer[kWidthsAt + 2] = static_cast<char>(fp_bytes);
  footer[kWidthsAt + 3] = static_cast<char>(dir_bits);
  put32(footer + kProbesAt, kFilterProbes);
  put64(footer + kClaimsAt, n);
  put64(footer + kSeqBaseAt, seq_base);
  put64(footer + kSeqEndAt, seq_end);
  put64(footer + kEntriesBytesAt, entries_bytes);
  put64(footer + kDirAt, dir_at);
  put64(footer + kFilterAt, filter_at);
  put64(footer + kFilterBlocksAt, filter_blocks);
  put64(footer + kDistBaseAt, static_cast<uint64_t>(dist_min));
  if (!out.write(footer, kChecksumAt, error)) return false;
  bool ok = false;
  const uint64_t sum = out.checksum(error, ok);
  if (!ok) return false;
  put64(footer + kChecksumAt, sum);
  put64(footer + kTailMagicAt, kMagic);
  if (!out.finish(footer + kChecksumAt, ClaimsFile::kFooterBytes - kChecksumAt, error)) return false;

  stats.claims = n;
  stats.bytes = filter_at + filter.size() * 8 + ClaimsFile::kFooterBytes;
  stats.seq_base = seq_base;
  stats.seq_end = seq_end;
  stats.key_width = key_width;
  stats.value_width = value_width;
  return true;
}

ClaimsFile::~ClaimsFile() { close(); }

ClaimsFile& ClaimsFile::operator=(ClaimsFile&& o) noexcept {
  if (this == &o) return *this;
  close();
  path_ = std::move(o.path_);
  map_ = o.map_;
  map_size_ = o.map_size_;
  entries_ = o.entries_;
  entries_bytes_ = o.entries_bytes_;
  dir_ = o.dir_;
  dir_bits_ = o.dir_bits_;
  filter_ = o.filter_;
  filter_blocks_ = o.filter_blocks_;
  seq_bytes_ = o.seq_bytes_;
  dist_bytes_ = o.dist_bytes_;
  fp_bytes_ = o.fp_bytes_;
  dist_base_ = o.dist_base_;
  stats_ = o.stats_;
  o.map_ = nullptr;
  o.map_size_ = 0;
  return *this;
}

void ClaimsFile::close() {
  if (map_ != nullptr) ::munmap(const_cast<char*>(map_), map_size_);
  map_ = nullptr;
  map_size_ = 0;
}

bool ClaimsFile::open(const std::string& path, bool verify, std::string& error) {
  close();
  path_ = path;
  auto bad = [&](const std::string& what) {
    error = "claims file " + path + ": " + what;
    close();
    return false;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return bad(std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return bad(std::string("cannot stat: ") + std::strerror(e));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kFooterBytes) {
    ::close(fd);
    return bad("shorter (" + std::to_string(size) + " bytes) than its footer");
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  int e = errno;
  ::close(fd);
  if (m == MAP_FAILED) return bad(std::string("cannot map: ") + std::strerror(e));
  map_ = static_cast<const char*>(m);
  map_size_ = size;

  const char* f = map_ + size - kFooterBytes;
  if (get64(f + kMagicAt) != kMagic || get64(f + kTailMagicAt) != kMagic)
    return bad("not a claims file (no magic in its last " + std::to_string(kFooterBytes) + " bytes)");
  if (get32(f + kVersionAt) != kVersion)
    return bad("version " + std::to_string(get32(f + kVersionAt)) + ", this build reads " +
               std::to_string(kVersion));
  if (verify && XXH3_64bits(map_, size - (kFooterBytes - kChecksumAt)) != get64(f + kChecksumAt))
    return bad("checksum mismatch (the file is damaged)");
  const uint32_t key_width = get32(f + kKeyWidthAt);
  seq_bytes_ = static_cast<uint8_t>(f[kWidthsAt]);
  dist_bytes_ = static_cast<uint8_t>(f[kWidthsAt + 1]);
  fp_bytes_ = static_cast<uint8_t>(f[kWidthsAt + 2]);
  dir_bits_ = static_cast<uint8_t>(f[kWidthsAt + 3]);
  entries_bytes_ = get64(f + kEntriesBytesAt);
  const uint64_t dir_at = get64(f + kDirAt), filter_at = get64(f + kFilterAt);
  filter_blocks_ = get64(f + kFilterBlocksAt);
  dist_base_ = get64(f + kDistBaseAt);
  const uint64_t body = size - kFooterBytes;
  if (seq_bytes_ > 8 || dist_bytes_ > 8 || fp_bytes_ > 8 || dir_bits_ > 32 ||
      get32(f + kProbesAt) != kFilterProbes || filter_blocks_ == 0 || dir_at % 8 != 0 ||
      filter_at % 64 != 0 || entries_bytes_ > dir_at ||
      ((uint64_t{1} << dir_bits_) + 1) > (body - std::min(body, dir_at)) / 8 ||
      dir_at + ((uint64_t{1} << dir_bits_) + 1) * 8 > filter_at || filter_at > body ||
      filter_blocks_ > (body - filter_at) / 64 || filter_at + filter_blocks_ * 64 != body)
    return bad("its footer's sections do not fit the file");
  entries_ = map_;
  dir_ = reinterpret_cast<const uint64_t*>(map_ + dir_at);
  filter_ = map_ + filter_at;
  const uint64_t buckets = uint64_t{1} << dir_bits_;
  if (dir_[0] != 0 || dir_[buckets] != entries_bytes_)
    return bad("its directory does not span its entries");
  for (uint64_t b = 0; b < buckets; ++b)
    if (dir_[b] > dir_[b + 1]) return bad("its directory is out of order at bucket " + std::to_string(b));
  stats_.claims = get64(f + kClaimsAt);
  stats_.bytes = size;
  stats_.seq_base = get64(f + kSeqBaseAt);
  stats_.seq_end = get64(f + kSeqEndAt);
  stats_.key_width = key_width;
  stats_.value_width = seq_bytes_ + dist_bytes_ + fp_bytes_;
  if (key_width != 0 && stats_.claims * (key_width + stats_.value_width) != entries_bytes_)
    return bad("its entries do not add up to " + std::to_string(stats_.claims) + " claims");
  return true;
}

const char* ClaimsFile::filter_block(uint64_t hash) const {
  return filter_ + 64 * filter_block_index(hash, filter_blocks_);
}

bool ClaimsFile::may_contain(uint64_t hash) const {
  const char* block = filter_block(hash);
  bool all = true;
  for_each_filter_bit(hash, [&](unsigned bit) {
    all = all && ((static_cast<uint8_t>(block[bit >> 3]) >> (bit & 7)) & 1);
  });
  return all;
}


void ClaimsFile::decode_value(const char* p, ClaimValue& out) const {
  out.seq = stats_.seq_base + get_le(p, seq_bytes_);
  out.offset = static_cast<int64_t>(out.seq + dist_base_ + get_le(p + seq_bytes_, dist_bytes_));
  out.fingerprint = get_le(p + seq_bytes_ + dist_bytes_, fp_bytes_);
  out.fingerprint_bytes = fp_bytes_;
}

bool ClaimsFile::find(std::string_view key, uint64_t hash, ClaimValue& out) const {
  if (map_ == nullptr || !may_contain(hash)) return false;
  const uint64_t b = dir_bits_ ? hash >> (64 - dir_bits_) : 0;
  const char* p = entries_ + dir_[b];
  const char* end = entries_ + dir_[b + 1];
  const uint32_t vw = stats_.value_width;
  if (stats_.key_width != 0) {
    if (key.size() != stats_.key_width) return false;
    const size_t stride = stats_.key_width + vw;
    for (; p + stride <= end; p += stride)
      if (std::memcmp(p, key.data(), key.size()) == 0) {
        decode_value(p + key.size(), out);
        return true;
      }
    return false;
  }
  while (p < end) {
    uint64_t len = 0;
    if (!get_varint(p, end, len) || len > static_cast<uint64_t>(end - p) ||
        vw > static_cast<uint64_t>(end - p) - len)
      return false;
    if (len == key.size() && std::memcmp(p, key.data(), key.size()) == 0) {
      decode_value(p + len, out);
      return true;
    }
    p += len + vw;
  }
  return false;
}

bool ClaimsFile::for_each(const std::function<bool(std::string_view, const ClaimValue&)>& f) const {
  const char* p = entries_;
  const char* end = entries_ + entries_bytes_;
  const uint32_t vw = stats_.value_width;
  ClaimValue v;
  while (p < end) {
    uint64_t len = stats_.key_width;
    if (len == 0 && !get_varint(p, end, len)) return false;
    if (len > static_cast<uint64_t>(end - p) || vw > static_cast<uint64_t>(end - p) - len) return false;
    decode_value(p + len, v);
    if (!f(std::string_view(p, len), v)) return true;
    p += len + vw;
  }
  return true;
}

}  // namespace exactly::dedupe
