// What a fold costs in each claims format, in one run: the SST file a store of
// claims.format sst folds (fold_claims: SstFileWriter with the store's own options, zstd level 1, then
// IngestExternalFile) against the store's own claims file (claims_file.hpp), on the
// same claims, alternating which goes first.
//
//   bench_fold_formats --claims 1398101 --folds 6 --lookups 200000
//
// Each fold is a table of UUID claims as a store's fill makes them (16-byte ids, the
// sequence numbers of one fill, owners a little behind them as duplicates accumulate,
// 4-byte fingerprints). Reported per format: the fold thread's CPU per claim and the
// bytes per claim on disk; then lookups of claims that are there (the newest claim of
// a random earlier fold) and of ids that are not, across every fold's file, as the
// store makes them for the ids its presence filter lets through. The lookups' answers
// are compared between the formats: any difference is reported and fails the run.
// Last, the own files are merged into one (merge_claims_files, as a store past
// claims.files.max merges neighbours): its CPU and bytes per claim, and its answers
// against the separate files' (a difference fails the run too).
#include <rocksdb/db.h>
#include <rocksdb/table.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "claim_codec.hpp"
#include "claim_fold.hpp"
#include "claims_file.hpp"
#include "fold_files.hpp"
#include "key_order.hpp"
#include "round_claims.hpp"
#include "store_options.hpp"

namespace fs = std::filesystem;
using namespace exactly::dedupe;

namespace {

struct Args {
  uint64_t claims = 1'398'101;  // a fold at the default threshold (64 MiB / 48)
  int folds = 6;
  uint64_t lookups = 200'000;
  uint32_t fp_bytes = 4;
  std::string compression = "zstd";
  std::string dir = (fs::temp_directory_path() / "exactly-bench-fold-formats").string();
};

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void key_of(int fold, uint64_t i, char out[16]) {
  uint64_t a = splitmix((static_cast<uint64_t>(fold) << 40) ^ i);
  uint64_t b = splitmix(a ^ 0x5555);
  std::memcpy(out, &a, 8);
  std::memcpy(out + 8, &b, 8);
}

// A store that has seen `fold` earlier fills, with 0.6% duplicates among its records:
// the fill's sequence numbers follow the earlier ones, owners trail them by the
// duplicates seen so far.
void fill(RoundClaims& t, int fold, uint64_t n) {
  t.clear();
  t.reserve(n, 16);
  const uint64_t seq0 = static_cast<uint64_t>(fold) * n;
  for (uint64_t i = 0; i < n; ++i) {
    char k[16];
    key_of(fold, i, k);
    const uint64_t seq = seq0 + i;
    const int64_t owner = static_cast<int64_t>(seq + seq / 166);
    t.upsert(std::string_view(k, 16), XXH3_64bits(k, 16), seq, owner, splitmix(seq ^ 0xf00d));
  }
}

uint64_t sst_bytes(rocksdb::DB* db) {
  uint64_t v = 0;
  db->GetIntProperty(db->DefaultColumnFamily(), "rocksdb.total-sst-files-size", &v);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--claims") a.claims = std::stoull(next());
    else if (k == "--folds") a.folds = std::stoi(next());
    else if (k == "--lookups") a.lookups = std::stoull(next());
    else if (k == "--fp") a.fp_bytes = static_cast<uint32_t>(std::stoul(next()));
    else if (k == "--compression") a.compression = next();
    else if (k == "--dir") a.dir = next();
    else {
      std::fprintf(stderr,
                   "usage: bench_fold_formats [--claims N] [--folds N] [--lookups N] [--fp 0|4|8] "
                   "[--compression zstd|none] [--dir PATH]\n");
      return 2;
    }
  }
  if (a.folds < 1 || a.claims < 1) return 2;
  fs::remove_all(a.dir);
  fs::create_directories(a.dir + "/sst");
  fs::create_directories(a.dir + "/own");

  // The claims column family as a store opens it, and the fold's options as start_fold
  // sets them.
  StoreTuning tuning;
  tuning.compression = a.compression;
  auto cache = rocksdb::NewLRUCache(size_t{1} << 30);
  rocksdb::Options options(make_db_options(tuning), make_claims_options(tuning, cache, nullptr));
  rocksdb::DB* raw = nullptr;
  rocksdb::Status st = rocksdb::DB::Open(options, a.dir + "/sst", &raw);
  if (!st.ok()) {
    std::fprintf(stderr, "open: %s\n", st.ToString().c_str());
    return 1;
  }
  std::unique_ptr<rocksdb::DB> db(raw);

  RoundClaims table;
  KeyOrder order;
  std::vector<uint32_t> live(a.claims);
  for (uint32_t i = 0; i < live.size(); ++i) live[i] = i;
  std::vector<ClaimsFile> files;
  double sst_cpu = 0, own_cpu = 0;
  uint64_t sst_total = 0, own_total = 0;
  std::printf("fold  claims   sst µs/claim  sst bytes/claim  own µs/claim  own bytes/claim\n");
  for (int f = 0; f < a.folds; ++f) {
    fill(table, f, a.claims);
    const uint64_t seq_end = static_cast<uint64_t>(f + 1) * a.claims;
    double cpu_sst = 0, cpu_own = 0;
    uint64_t bytes_sst = 0;
    ClaimsFileStats stats;
    auto run_sst = [&] {
      rocksdb::Options fo = fold_sst_options(options, fold_compression(tuning));
      fo.table_properties_collector_factories.push_back(fold_label(seq_end));
      const uint64_t before = sst_bytes(db.get());
      const double c0 = thread_cpu();
      rocksdb::Status s = fold_claims(db.get(), db->DefaultColumnFamily(), fo,
                                      a.dir + "/sst/fold-" + std::to_string(f) + ".sst", table, live,
                                      a.fp_bytes, order);
      cpu_sst = thread_cpu() - c0;
      if (!s.ok()) {
        std::fprintf(stderr, "fold_claims: %s\n", s.ToString().c_str());
        std::exit(1);
      }
      bytes_sst = sst_bytes(db.get()) - before;
    };
    auto run_own = [&] {
      std::string error;
      const std::string path = a.dir + "/own/fold-" + std::to_string(f) + ".claims";
      const double c0 = thread_cpu();
      if (!write_claims_file(path, table, live, a.fp_bytes, seq_end, stats, error)) {
        std::fprintf(stderr, "%s\n", error.c_str());
        std::exit(1);
      }
      cpu_own = thread_cpu() - c0;
      ClaimsFile file;
      if (!file.open(path, true, error)) {
        std::fprintf(stderr, "%s\n", error.c_str());
        std::exit(1);
      }
      files.push_back(std::move(file));
    };
    if (f % 2 == 0) {
      run_sst();
      run_own();
    } else {
      run_own();
      run_sst();
    }
    sst_cpu += cpu_sst;
    own_cpu += cpu_own;
    sst_total += bytes_sst;
    own_total += stats.bytes;
    const double n = static_cast<double>(a.claims);
    std::printf("%4d  %7" PRIu64 "  %12.3f  %15.2f  %12.3f  %15.2f\n", f, a.claims, cpu_sst / n * 1e6,
                static_cast<double>(bytes_sst) / n, cpu_own / n * 1e6, static_cast<double>(stats.bytes) / n);
  }
  const double all = static_cast<double>(a.claims) * a.folds;
  std::printf("all   %7.0f  %12.3f  %15.2f  %12.3f  %15.2f   (own/sst CPU %.2f)\n", all,
              sst_cpu / all * 1e6, static_cast<double>(sst_total) / all, own_cpu / all * 1e6,
              static_cast<double>(own_total) / all, own_cpu / sst_cpu);

  // Lookups across every fold's file: claims that are there, then ids that are not.
  uint64_t mismatches = 0;
  for (int present = 1; present >= 0; --present) {
    const size_t batch = 8;
    std::vector<std::string> keys(a.lookups);
    for (uint64_t q = 0; q < a.lookups; ++q) {
      char k[16];
      const uint64_t r = splitmix(q * 2 + static_cast<uint64_t>(present));
      if (present) key_of(static_cast<int>(r % static_cast<uint64_t>(a.folds)), (r >> 20) % a.claims, k);
      else key_of(a.folds + 1, q, k);
      keys[q].assign(k, 16);
    }
    std::vector<uint64_t> sst_seq(a.lookups, UINT64_MAX), own_seq(a.lookups, UINT64_MAX);
    rocksdb::ReadOptions ro = make_lookup_read_options();
    double c0 = thread_cpu();
    for (uint64_t q = 0; q < a.lookups; q += batch) {
      const size_t m = static_cast<size_t>(std::min<uint64_t>(batch, a.lookups - q));
      std::vector<size_t> idx(m);
      for (size_t j = 0; j < m; ++j) idx[j] = q + j;
      std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return keys[x] < keys[y]; });
      std::vector<rocksdb::Slice> ks(m);
      for (size_t j = 0; j < m; ++j) ks[j] = rocksdb::Slice(keys[idx[j]]);
      std::vector<rocksdb::PinnableSlice> vs(m);
      std::vector<rocksdb::Status> ss(m);
      db->MultiGet(ro, db->DefaultColumnFamily(), m, ks.data(), vs.data(), ss.data(), true);
      for (size_t j = 0; j < m; ++j) {
        uint64_t seq = 0;
        if (ss[j].ok() && decode_claim_seq(std::string_view(vs[j].data(), vs[j].size()), seq))
          sst_seq[idx[j]] = seq;
      }
    }
    const double sst_lookup = thread_cpu() - c0;
    c0 = thread_cpu();
    for (uint64_t q = 0; q < a.lookups; ++q) {
      const uint64_t h = XXH3_64bits(keys[q].data(), keys[q].size());
      ClaimValue v;
      for (auto it = files.rbegin(); it != files.rend(); ++it)
        if (it->find(keys[q], h, v)) {
          own_seq[q] = v.seq;
          break;
        }
    }
    const double own_lookup = thread_cpu() - c0;
    uint64_t found = 0;
    for (uint64_t q = 0; q < a.lookups; ++q) {
      mismatches += sst_seq[q] != own_seq[q];
      found += own_seq[q] != UINT64_MAX;
    }
    std::printf("lookups of %s ids across %d files: sst %.2f µs, own %.2f µs each (%" PRIu64
                " of %" PRIu64 " found)\n",
                present ? "stored" : "absent", a.folds, sst_lookup / static_cast<double>(a.lookups) * 1e6,
                own_lookup / static_cast<double>(a.lookups) * 1e6, found, a.lookups);
  }
  // The own files merged into one (as a store past claims.files.max merges them, here
  // all at once): its CPU, its size, and its answers against the files'.
  {
    std::vector<const ClaimsFile*> inputs;
    for (const auto& f : files) inputs.push_back(&f);
    ClaimsFileStats stats;
    std::string error;
    const std::string path = a.dir + "/own/merged.claims";
    const double c0 = thread_cpu();
    if (!merge_claims_files(path, inputs, 0, 1, stats, error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    const double merge_cpu = thread_cpu() - c0;
    ClaimsFile merged;
    if (!merged.open(path, true, error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    uint64_t differ = 0;
    for (uint64_t q = 0; q < a.lookups; ++q) {
      for (int present = 1; present >= 0; --present) {
        char k[16];
        const uint64_t r = splitmix(q * 2 + static_cast<uint64_t>(present));
        if (present) key_of(static_cast<int>(r % static_cast<uint64_t>(a.folds)), (r >> 20) % a.claims, k);
        else key_of(a.folds + 1, q, k);
        const std::string_view key(k, 16);
        const uint64_t h = XXH3_64bits(k, 16);
        ClaimValue v, w;
        bool in_files = false;
        for (auto it = files.rbegin(); it != files.rend() && !in_files; ++it) in_files = it->find(key, h, v);
        const bool in_merged = merged.find(key, h, w);
        differ += in_files != in_merged || (in_files && (v.seq != w.seq || v.offset != w.offset));
      }
    }
    std::printf("merge of %d files: %.3f µs and %.2f bytes per claim (%" PRIu64 " claims)%s\n", a.folds,
                merge_cpu / all * 1e6, static_cast<double>(stats.bytes) / static_cast<double>(stats.claims),
                stats.claims, differ ? "" : ", answers agree");
    mismatches += differ;
  }
  files.clear();
  db.reset();
  fs::remove_all(a.dir);
  if (mismatches) {
    std::printf("MISMATCH: %" PRIu64 " lookups answered differently by the two formats\n", mismatches);
    return 1;
  }
  return 0;
}
