// A file of folded claims in a format of the store's own: what a store folds into by
// default (claims.format own; sst folds into RocksDB SST files through fold_claims
// instead), and what merges of those files write (docs/claims-file.md says why).
//
// An SST entry carries RocksDB's framing (an 8-byte sequence-and-type suffix, three
// length varints) that only zstd brings under 30 bytes per UUID id, and zstd plus the
// table builder are most of a fold's CPU. Here a claim is its key and a value of fixed
// width chosen per file: the sequence number relative to the file's lowest, the owner's
// distance from it, the fingerprint. A UUID id takes 16 + 3 + 1 + 4 = 24 bytes, and
// writing a file is a sort by hash and one sequential pass.
//
// Layout (little-endian):
//   entries   sorted by the key's XXH3 hash; each is the key (fixed width, or a varint
//             length and the key when a file's keys differ in length), then
//             seq - seq_base (seq_bytes), (offset - seq) - dist_base (dist_bytes) and
//             the fingerprint (fp_bytes); seq_base and dist_base are the file's
//             smallest, so the widths follow one fold's spread, not the store's age
//   directory 2^dir_bits + 1 u64: where the entries of each value of the hash's top
//             dir_bits bits begin (relative to the first entry); the last is the end
//   filter    blocked Bloom filter of the hashes, one 64-byte block per key
//   footer    kFooterBytes: the widths, counts and section offsets, merged_from and
//             after (see ClaimsFileStats), the XXH3 of every byte before its checksum field, and
//             the magic again as the file's last 8 bytes
// A file is written under a temporary name, synced and renamed: it exists whole or not.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "claim_codec.hpp"
#include "round_claims.hpp"

namespace exactly::dedupe {

// A store's claims files are named by their label: <dir>/claims-<seq_end>.xc, and
// claims-<seq_end>.xc.tmp while one is written.
std::string claims_file_path(const std::string& dir, uint64_t seq_end);
enum class ClaimsFileName { other, whole, unfinished };
ClaimsFileName parse_claims_file_name(std::string_view name, uint64_t& seq_end);
struct ClaimsFileEntry {
  uint64_t seq_end = 0;
  std::string path;
  ClaimsFileName kind = ClaimsFileName::whole;  // whole or unfinished
};
// The claims files in `dir`, whole and unfinished, oldest label first; `ec` set when the
// directory cannot be read.
std::vector<ClaimsFileEntry> list_claims_files(const std::string& dir, std::error_code& ec);

struct ClaimsFileStats {
  uint64_t claims = 0;
  uint64_t bytes = 0;  // the whole file
  uint64_t seq_base = 0, seq_end = 0;
  uint32_t key_width = 0;  // 0: keys of several lengths
  uint32_t value_width = 0;
  uint32_t fp_bytes = 0;
  // 0 for a fold's file. For a merged one, 1 + the label of the newest file below its
  // inputs (0 when none): every other file labelled in [merged_from, seq_end) was an
  // input and is superseded by it (a crash may leave one behind).
  uint64_t merged_from = 0;
  // 1 + the label of the file this one follows in the store (the newest when a fold
  // began; for a merged file, the one below its inputs: its merged_from), 1 when none,
  // 0 in files written before it. A store whose file is missing between two others (a
  // file deleted by hand) is told by it at open (PartitionStore::load_own_files).
  uint64_t after = 0;
};

// Writes the claims of `table` indexed by `live` to `path`. Every claim's seq must be
// below `seq_end` (the file's label: once a store's floor reaches it, the whole file is
// evicted). `pace`, when set, is called with the share written so far every few thousand
// claims and may sleep. On failure returns false with `error` naming the file, and
// leaves no file behind.
bool write_claims_file(const std::string& path, const RoundClaims& table,
                       const std::vector<uint32_t>& live, uint32_t fp_bytes, uint64_t seq_end,
                       ClaimsFileStats& stats, std::string& error,
                       const std::function<void(double)>& pace = {}, uint64_t after = 0);

class ClaimsFile;

// Writes one file of the claims of `inputs` (files of one store) whose seq is at or above
// `floor`; a key that several hold keeps its newest claim. The file's label is the
// highest of theirs, its fingerprints the narrowest of theirs; `merged_from` goes into
// its footer (ClaimsFileStats). Written like write_claims_file (under `path`.tmp, synced,
// renamed over whatever `path` was); `stop`, when set, ends it early without a file.
bool merge_claims_files(const std::string& path, const std::vector<const ClaimsFile*>& inputs,
                        uint64_t floor, uint64_t merged_from, ClaimsFileStats& stats,
                        std::string& error, const std::atomic<bool>* stop = nullptr);

class ClaimsFile {
 public:
  ClaimsFile() = default;
  ~ClaimsFile();
  ClaimsFile(ClaimsFile&& o) noexcept { *this = std::move(o); }
  ClaimsFile& operator=(ClaimsFile&& o) noexcept;
  ClaimsFile(const ClaimsFile&) = delete;
  ClaimsFile& operator=(const ClaimsFile&) = delete;

  // Maps `path` and checks its footer, its sections' bounds and (when `verify`) its
  // checksum. False with `error` naming the file and what is wrong.
  bool open(const std::string& path, bool verify, std::string& error);
  // After a failed open: the file's contents were wrong (short, no magic, checksum,
  // sections), not the system's refusal or a newer build's version.
  bool damaged() const { return damaged_; }

  // The claim of `key` whose XXH3 hash is `hash`, if this file holds one.
  bool find(std::string_view key, uint64_t hash, ClaimValue& out) const;
  // False when the filter rules the hash out (about 1% false positives).
  bool may_contain(uint64_t hash) const;

  // Every claim in file order; `f(key, claim)` returns false to stop. False when an
  // entry does not decode (only possible in a file opened without `verify`).
  bool for_each(const std::function<bool(std::string_view, const ClaimValue&)>& f) const;

  // Reads the entries one by one, in file (hash) order. The file must outlive it.
  class Cursor {
   public:
    explicit Cursor(const ClaimsFile& f) : f_(&f), p_(f.entries_) {}
    // False at the end, or at an entry that does not decode (a file opened without
    // `verify`).
    bool next(std::string_view& key, ClaimValue& v);
    bool at_end() const { return p_ == f_->entries_ + f_->entries_bytes_; }

   private:
    const ClaimsFile* f_;
    const char* p_;
  };

  const ClaimsFileStats& stats() const { return stats_; }
  const std::string& path() const { return path_; }

  static constexpr size_t kFooterBytes = 128;

 private:
  void close();
  const char* filter_block(uint64_t hash) const;
  void decode_value(const char* p, ClaimValue& out) const;

  std::string path_;
  bool damaged_ = false;
  const char* map_ = nullptr;
  size_t map_size_ = 0;
  const char* entries_ = nullptr;
  uint64_t entries_bytes_ = 0;
  const uint64_t* dir_ = nullptr;
  uint32_t dir_bits_ = 0;
  const char* filter_ = nullptr;
  uint64_t filter_blocks_ = 0;
  uint32_t seq_bytes_ = 0, dist_bytes_ = 0, fp_bytes_ = 0;
  uint64_t dist_base_ = 0;
  ClaimsFileStats stats_;
};

}  // namespace exactly::dedupe
