#include "claims_file.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <exactly/durable_file.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
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
  kMergedFromAt = 88,  // 0 in a fold's file (and in files written before merges)
  kAfterAt = 96,       // 0 in files written before it (ClaimsFileStats::after)
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
// The owner's distance from the sequence number (a claim's offset less its seq): both
// grow over a store's life (duplicates since it began), their spread within one file
// does not. Wrapping arithmetic, like offset_from.
int64_t distance(uint64_t seq, int64_t offset) {
  return static_cast<int64_t>(static_cast<uint64_t>(offset) - seq);
}

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

// Writes entries that arrive in hash order: the directory and the filter grow as they
// come, the footer closes the file. `claims` bounds how many will come (it sizes the
// directory and the filter); the widths hold every value that will.
class FileWriter {
 public:
  struct Layout {
    uint64_t claims = 0;
    uint32_t key_width = 0;  // 0: keys of several lengths
    uint64_t seq_base = 0, seq_end = 0;
    int64_t dist_min = 0;
    uint32_t seq_bytes = 0, dist_bytes = 0, fp_bytes = 0;
    uint64_t merged_from = 0;
    uint64_t after = 0;
  };

  FileWriter(const std::string& path, const Layout& l) : out_(path), l_(l) {
    while (dir_bits_ < 32 && (l.claims >> (dir_bits_ + 1)) >= kBucketEntries) ++dir_bits_;
    buckets_ = uint64_t{1} << dir_bits_;
    filter_blocks_ = std::max<uint64_t>(1, (l.claims * kFilterBitsPerKey + 511) / 512);
    filter_.assign(filter_blocks_ * 8, 0);
    dir_.assign(buckets_ + 1, 0);
    value_width_ = l.seq_bytes + l.dist_bytes + l.fp_bytes;
  }
  bool open(std::string& error) { return out_.open(error); }
  uint64_t buckets() const { return buckets_; }
  uint64_t bucket_of(uint64_t hash) const { return dir_bits_ ? hash >> (64 - dir_bits_) : 0; }

  bool add(uint64_t hash, std::string_view key, uint64_t seq, int64_t offset, uint64_t fp,
           std::string& error) {
    const uint64_t b = bucket_of(hash);
    while (next_bucket_ <= b) dir_[next_bucket_++] = out_.written();
    uint64_t* block = filter_.data() + 8 * filter_block_index(hash, filter_blocks_);
    for_each_filter_bit(hash, [&](unsigned bit) { block[bit >> 6] |= uint64_t{1} << (bit & 63); });
    // Keys are at most 2^17 bytes (RoundClaims::Claim::key_len): always within the buffer.
    char* p = out_.room(10 + key.size() + value_width_, error);
    if (p == nullptr) return false;
    char* q = p;
    if (!l_.key_width) q = put_varint(q, key.size());
    std::memcpy(q, key.data(), key.size());
    q += key.size();
    put_le(q, seq - l_.seq_base, l_.seq_bytes);
    put_le(q + l_.seq_bytes, static_cast<uint64_t>(distance(seq, offset)) - static_cast<uint64_t>(l_.dist_min),
           l_.dist_bytes);
    put_le(q + l_.seq_bytes + l_.dist_bytes, fp, l_.fp_bytes);
    q += value_width_;
    out_.commit(static_cast<size_t>(q - p));
    ++count_;
    return true;
  }

  bool finish(ClaimsFileStats& stats, std::string& error) {
    const uint64_t entries_bytes = out_.written();
    while (next_bucket_ <= buckets_) dir_[next_bucket_++] = entries_bytes;
    const uint64_t dir_at = align(entries_bytes, 8);
    if (!out_.zeros(dir_at - entries_bytes, error) ||
        !out_.write(reinterpret_cast<const char*>(dir_.data()), dir_.size() * 8, error))
      return false;
    const uint64_t filter_at = align(out_.written(), 64);
    if (!out_.zeros(filter_at - out_.written(), error) ||
        !out_.write(reinterpret_cast<const char*>(filter_.data()), filter_.size() * 8, error))
      return false;

    char footer[ClaimsFile::kFooterBytes] = {};
    put64(footer + kMagicAt, kMagic);
    put32(footer + kVersionAt, kVersion);
    put32(footer + kKeyWidthAt, l_.key_width);
    footer[kWidthsAt] = static_cast<char>(l_.seq_bytes);
    footer[kWidthsAt + 1] = static_cast<char>(l_.dist_bytes);
    footer[kWidthsAt + 2] = static_cast<char>(l_.fp_bytes);
    footer[kWidthsAt + 3] = static_cast<char>(dir_bits_);
    put32(footer + kProbesAt, kFilterProbes);
    put64(footer + kClaimsAt, count_);
    put64(footer + kSeqBaseAt, l_.seq_base);
    put64(footer + kSeqEndAt, l_.seq_end);
    put64(footer + kEntriesBytesAt, entries_bytes);
    put64(footer + kDirAt, dir_at);
    put64(footer + kFilterAt, filter_at);
    put64(footer + kFilterBlocksAt, filter_blocks_);
    put64(footer + kDistBaseAt, static_cast<uint64_t>(l_.dist_min));
    put64(footer + kMergedFromAt, l_.merged_from);
    put64(footer + kAfterAt, l_.after);
    if (!out_.write(footer, kChecksumAt, error)) return false;
    bool ok = false;
    const uint64_t sum = out_.checksum(error, ok);
    if (!ok) return false;
    put64(footer + kChecksumAt, sum);
    put64(footer + kTailMagicAt, kMagic);
    if (!out_.finish(footer + kChecksumAt, ClaimsFile::kFooterBytes - kChecksumAt, error)) return false;

    stats.claims = count_;
    stats.bytes = filter_at + filter_.size() * 8 + ClaimsFile::kFooterBytes;
    stats.seq_base = l_.seq_base;
    stats.seq_end = l_.seq_end;
    stats.key_width = l_.key_width;
    stats.value_width = value_width_;
    stats.fp_bytes = l_.fp_bytes;
    stats.merged_from = l_.merged_from;
    stats.after = l_.after;
    return true;
  }

 private:
  Output out_;
  Layout l_;
  uint32_t dir_bits_ = 0;
  uint64_t buckets_ = 1, filter_blocks_ = 1, next_bucket_ = 0, count_ = 0;
  uint32_t value_width_ = 0;
  std::vector<uint64_t> filter_, dir_;
};

// What the widths of a file must hold, gathered claim by claim.
struct Spread {
  uint64_t n = 0, seq_base = UINT64_MAX, seq_max = 0;
  int64_t dist_min = INT64_MAX, dist_max = INT64_MIN;
  size_t key_len = 0;
  bool same_len = true;
  void add(size_t len, uint64_t seq, int64_t offset) {
    if (n++ == 0) key_len = len;
    seq_base = std::min(seq_base, seq);
    seq_max = std::max(seq_max, seq);
    dist_min = std::min(dist_min, distance(seq, offset));
    dist_max = std::max(dist_max, distance(seq, offset));
    same_len = same_len && len == key_len;
  }
  FileWriter::Layout layout(uint32_t fp_bytes, uint64_t seq_end, uint64_t merged_from, uint64_t after) const {
    FileWriter::Layout l;
    l.claims = n;
    l.key_width = n && same_len && key_len > 0 ? static_cast<uint32_t>(key_len) : 0;
    l.seq_base = n ? seq_base : 0;
    l.seq_end = seq_end;
    l.dist_min = n ? dist_min : 0;
    l.seq_bytes = width_of(n ? seq_max - seq_base : 0);
    l.dist_bytes = n ? width_of(static_cast<uint64_t>(dist_max) - static_cast<uint64_t>(dist_min)) : 0;
    l.fp_bytes = fp_bytes;
    l.merged_from = merged_from;
    l.after = after;
    return l;
  }
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

std::vector<ClaimsFileEntry> list_claims_files(const std::string& dir, std::error_code& ec) {
  std::vector<ClaimsFileEntry> out;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    ClaimsFileEntry f;
    f.kind = parse_claims_file_name(e.path().filename().string(), f.seq_end);
    if (f.kind == ClaimsFileName::other) continue;
    f.path = e.path().string();
    out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.seq_end < b.seq_end; });
  return out;
}

bool write_claims_file(const std::string& path, const RoundClaims& table,
                       const std::vector<uint32_t>& live, uint32_t fp_bytes, uint64_t seq_end,
                       ClaimsFileStats& stats, std::string& error,
                       const std::function<void(double)>& pace, uint64_t after) {
  if (fp_bytes > 8) {
    error = "claims file " + path + ": fingerprint of " + std::to_string(fp_bytes) + " bytes";
    return false;
  }
  const auto& claims = table.claims();
  const uint64_t n = live.size();
  // Widths: one pass over the claims in table order (sequential).
  Spread spread;
  for (uint32_t i : live) spread.add(claims[i].key_len, claims[i].seq, claims[i].offset);
  if (n && spread.seq_max >= seq_end) {
    error = "claims file " + path + ": a claim's sequence number " + std::to_string(spread.seq_max) +
            " is not below the file's end " + std::to_string(seq_end);
    return false;
  }
  FileWriter w(path, spread.layout(fp_bytes, seq_end, 0, after));

  // Hash order: count per bucket of the file's directory, scatter, then sort each
  // (small) bucket.
  const uint64_t buckets = w.buckets();
  auto bucket_of = [&](uint64_t h) { return w.bucket_of(h); };
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

  if (!w.open(error)) return false;
  constexpr size_t kAhead = 16;
  const char* arena = table.arena_data();
  for (size_t j = 0; j < kAhead && j < n; ++j)
    prefetch_claim_and_key(&claims[order[j].index], arena + order[j].key_low);
  for (size_t j = 0; j < n; ++j) {
    if (j + kAhead < n)
      prefetch_claim_and_key(&claims[order[j + kAhead].index], arena + order[j + kAhead].key_low);
    if (pace && (j & 8191) == 0) pace(static_cast<double>(j) / static_cast<double>(n));
    const auto& c = claims[order[j].index];
    if (!w.add(c.hash, table.key_of(c), c.seq, c.offset, c.fingerprint, error)) return false;
  }
  return w.finish(stats, error);
}

bool merge_claims_files(const std::string& path, const std::vector<const ClaimsFile*>& inputs,
                        uint64_t floor, uint64_t merged_from, ClaimsFileStats& stats,
                        std::string& error, const std::atomic<bool>* stop) {
  auto stopped = [&] {
    if (stop == nullptr || !stop->load(std::memory_order_relaxed)) return false;
    error = "claims file " + path + ": merge stopped";
    return true;
  };
  // Widths, and the end: the highest of the inputs' (the merged file goes when the
  // floor passes its newest claim). A first pass reads every input for the widths its
  // live claims need: the inputs' footers only bound them, up to a byte a claim wider.
  Spread spread;
  uint32_t fp_bytes = 8;
  uint64_t seq_end = 0;
  for (const ClaimsFile* f : inputs) {
    fp_bytes = std::min(fp_bytes, f->stats().fp_bytes);
    seq_end = std::max(seq_end, f->stats().seq_end);
    if (!f->for_each([&](std::string_view key, const ClaimValue& v) {
          if (v.seq >= floor) spread.add(key.size(), v.seq, v.offset);
          return true;
        })) {
      error = "claims file " + f->path() + ": an entry does not decode";
      return false;
    }
    if (stopped()) return false;
  }
  // The file it follows is the one below its inputs: merged_from says which already.
  FileWriter w(path, spread.layout(fp_bytes, seq_end, merged_from, merged_from));
  if (!w.open(error)) return false;

  // Every input is in hash order: a k-way merge keeps it. A key in several inputs (an
  // evicted claim and the claim made again later) keeps its newest claim.
  struct Head {
    ClaimsFile::Cursor cursor;
    std::string_view key;
    ClaimValue value;
    uint64_t hash = 0;
    bool live = false;
  };
  std::vector<Head> heads;
  heads.reserve(inputs.size());
  auto advance = [&](Head& h) {
    while ((h.live = h.cursor.next(h.key, h.value)) && h.value.seq < floor) {
    }
    if (h.live) h.hash = XXH3_64bits(h.key.data(), h.key.size());
  };
  for (const ClaimsFile* f : inputs) {
    heads.push_back(Head{ClaimsFile::Cursor(*f), {}, {}, 0, false});
    advance(heads.back());
  }
  const uint64_t fp_mask = fp_bytes >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * fp_bytes)) - 1;
  // All entries of the lowest hash at once (two keys may share a hash, in any order
  // within an input): of the claims of one key, the newest is kept.
  std::vector<std::pair<std::string_view, ClaimValue>> group;
  for (uint64_t groups = 0;; ++groups) {
    if ((groups & 65535) == 0 && stopped()) return false;
    const Head* low = nullptr;
    for (const Head& h : heads)
      if (h.live && (low == nullptr || h.hash < low->hash)) low = &h;
    if (low == nullptr) break;
    const uint64_t hash = low->hash;
    group.clear();
    for (Head& h : heads)
      while (h.live && h.hash == hash) {
        group.emplace_back(h.key, h.value);
        advance(h);
      }
    for (size_t i = 0; i < group.size(); ++i) {
      bool newer_elsewhere = false;
      for (size_t j = 0; j < group.size() && !newer_elsewhere; ++j)
        newer_elsewhere = j != i && group[j].first == group[i].first &&
                          (group[j].second.seq > group[i].second.seq ||
                           (group[j].second.seq == group[i].second.seq && j < i));
      if (newer_elsewhere) continue;
      const ClaimValue& v = group[i].second;
      if (!w.add(hash, group[i].first, v.seq, v.offset, v.fingerprint & fp_mask, error)) return false;
    }
  }
  for (size_t i = 0; i < heads.size(); ++i)
    if (!heads[i].cursor.at_end()) {  // an entry that stopped its cursor short
      error = "claims file " + inputs[i]->path() + ": an entry does not decode";
      return false;
    }
  return w.finish(stats, error);
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
  damaged_ = false;
  auto bad = [&](const std::string& what) {
    error = "claims file " + path + ": " + what;
    close();
    return false;
  };
  // What is in the file is wrong, as against the system refusing it or a newer build's.
  auto damaged = [&](const std::string& what) {
    damaged_ = true;
    return bad(what);
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
    return damaged("shorter (" + std::to_string(size) + " bytes) than its footer");
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  int e = errno;
  ::close(fd);
  if (m == MAP_FAILED) return bad(std::string("cannot map: ") + std::strerror(e));
  map_ = static_cast<const char*>(m);
  map_size_ = size;

  const char* f = map_ + size - kFooterBytes;
  if (get64(f + kMagicAt) != kMagic || get64(f + kTailMagicAt) != kMagic)
    return damaged("not a claims file (no magic in its last " + std::to_string(kFooterBytes) + " bytes)");
  if (get32(f + kVersionAt) != kVersion)
    return bad("version " + std::to_string(get32(f + kVersionAt)) + ", this build reads " +
               std::to_string(kVersion));
  if (verify && XXH3_64bits(map_, size - (kFooterBytes - kChecksumAt)) != get64(f + kChecksumAt))
    return damaged("checksum mismatch (the file is damaged)");
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
    return damaged("its footer's sections do not fit the file");
  entries_ = map_;
  dir_ = reinterpret_cast<const uint64_t*>(map_ + dir_at);
  filter_ = map_ + filter_at;
  const uint64_t buckets = uint64_t{1} << dir_bits_;
  if (dir_[0] != 0 || dir_[buckets] != entries_bytes_)
    return damaged("its directory does not span its entries");
  for (uint64_t b = 0; b < buckets; ++b)
    if (dir_[b] > dir_[b + 1]) return damaged("its directory is out of order at bucket " + std::to_string(b));
  stats_.claims = get64(f + kClaimsAt);
  stats_.bytes = size;
  stats_.seq_base = get64(f + kSeqBaseAt);
  stats_.seq_end = get64(f + kSeqEndAt);
  stats_.key_width = key_width;
  stats_.value_width = seq_bytes_ + dist_bytes_ + fp_bytes_;
  stats_.fp_bytes = fp_bytes_;
  stats_.merged_from = get64(f + kMergedFromAt);
  stats_.after = get64(f + kAfterAt);
  if (key_width != 0 && stats_.claims * (key_width + stats_.value_width) != entries_bytes_)
    return damaged("its entries do not add up to " + std::to_string(stats_.claims) + " claims");
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

bool ClaimsFile::Cursor::next(std::string_view& key, ClaimValue& v) {
  const char* end = f_->entries_ + f_->entries_bytes_;
  const uint32_t vw = f_->stats_.value_width;
  // p_ moves only past a whole entry: a bad one leaves the cursor short of the end.
  const char* p = p_;
  if (p >= end) return false;
  uint64_t len = f_->stats_.key_width;
  if (len == 0 && !get_varint(p, end, len)) return false;
  if (len > static_cast<uint64_t>(end - p) || vw > static_cast<uint64_t>(end - p) - len) return false;
  key = std::string_view(p, len);
  f_->decode_value(p + len, v);
  p_ = p + len + vw;
  return true;
}

bool ClaimsFile::for_each(const std::function<bool(std::string_view, const ClaimValue&)>& f) const {
  Cursor c(*this);
  std::string_view key;
  ClaimValue v;
  while (c.next(key, v))
    if (!f(key, v)) return true;
  return c.at_end();
}

}  // namespace exactly::dedupe
