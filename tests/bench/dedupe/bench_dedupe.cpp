// Dedupe throughput against RocksDB's own absent-key lookup rate, in one run.
//
//   bench_dedupe --keys 10000000 --dup 0.006 --batch 1024 --round 100000
//
// Phase 1 drives the dedupe stage alone (the real exactly_dedupe.so, loaded by the
// SDK harness, called through its C vtable exactly as the host does) with JSON events
// whose messageId is a UUID; `--dup` of the records repeat an earlier id. Only the
// stage's calls are timed, not the making of records. Phase 2 is the reference: a loop
// of Get() of random absent 16-byte keys on the store phase 1 left, opened with the
// plugin's own options (store_options.cpp), like db_bench's readmissing. Phase 3
// flushes and fully compacts the store and measures its bytes per key on disk.
#include <exactly/testing/harness.hpp>
#include <rocksdb/db.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table_properties.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "claim_codec.hpp"
#include "claims_file.hpp"
#include "fold_files.hpp"
#include "store_options.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  uint64_t keys = 10'000'000;
  double dup = 0.006;
  size_t batch = 1024;
  size_t round = 100'000;
  uint64_t reads = 2'000'000;
  size_t payload = 80;
  std::string dir = (fs::temp_directory_path() / "exactly-bench-dedupe").string();
  std::string id = "json";  // json | key
  std::string cache = "1073741824";
  std::string write_buffer = "67108864";
  std::string filter = "bloom";
  std::string filter_bits;  // empty: the plugin's default
  std::string compression = "zstd";
  std::string fold_files_max = "256";
  std::string fingerprint = "4";
  std::string format = "own";  // claims.format
  bool keep = false;
};

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The id of the i-th distinct message, as canonical UUID text.
void uuid_of(uint64_t i, char* out) {
  static const char* hex = "0123456789abcdef";
  uint64_t a = splitmix(i * 2 + 1), b = splitmix(i * 2 + 2);
  uint8_t bytes[16];
  std::memcpy(bytes, &a, 8);
  std::memcpy(bytes + 8, &b, 8);
  size_t o = 0;
  for (int k = 0; k < 16; ++k) {
    if (k == 4 || k == 6 || k == 8 || k == 10) out[o++] = '-';
    out[o++] = hex[bytes[k] >> 4];
    out[o++] = hex[bytes[k] & 15];
  }
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

uint64_t dir_bytes(const fs::path& p, const char* ext = nullptr) {
  uint64_t total = 0;
  for (auto& e : fs::recursive_directory_iterator(p))
    if (e.is_regular_file() && (!ext || e.path().extension() == ext)) total += e.file_size();
  return total;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// CPU time of this thread: on a shared machine the wall clock also counts the time
// other processes had the core, so rates are given both ways.
double thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU time of every thread of the process.
double process_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--keys") a.keys = std::stoull(next());
    else if (k == "--dup") a.dup = std::stod(next());
    else if (k == "--batch") a.batch = std::stoull(next());
    else if (k == "--round") a.round = std::stoull(next());
    else if (k == "--reads") a.reads = std::stoull(next());
    else if (k == "--payload") a.payload = std::stoull(next());
    else if (k == "--dir") a.dir = next();
    else if (k == "--id") a.id = next();
    else if (k == "--cache") a.cache = next();
    else if (k == "--filter") a.filter = next();
    else if (k == "--filter-bits") a.filter_bits = next();
    else if (k == "--write-buffer") a.write_buffer = next();
    else if (k == "--compression") a.compression = next();
    else if (k == "--fold-files-max") a.fold_files_max = next();
    else if (k == "--fingerprint") a.fingerprint = next();
    else if (k == "--claims-format") a.format = next();
    else if (k == "--keep") a.keep = true;
    else {
      std::fprintf(stderr,
                   "usage: bench_dedupe [--keys N] [--dup R] [--batch N] [--round N] "
                   "[--reads N] [--payload BYTES] [--id json|key] [--dir PATH] [--cache BYTES] "
                   "[--filter bloom|ribbon] [--filter-bits N] [--compression none|lz4|zstd] [--write-buffer BYTES] "
                   "[--fingerprint 0|4|8] [--fold-files-max N] [--claims-format own|sst] [--keep]\n");
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, a)) return 2;
  fs::remove_all(a.dir);
  fs::create_directories(a.dir);

  // ------------------------------------------------------------ phase 1: dedupe
  exactly::testing::Library lib(std::string(EXACTLY_PLUGIN_DIR) + "/exactly_dedupe.so");
  const ex_component& comp = lib.component(EX_KIND_TRANSFORM, "dedupe");
  const auto* vt = static_cast<const ex_transform_vtable*>(comp.vtable);
  exactly::testing::FakeHost host("bench");
  exactly::testing::Pairs cfg = {{"state.dir", a.dir},
                                 {"rocksdb.block.cache.size", a.cache},
                                 {"rocksdb.filter", a.filter},
                                 {"rocksdb.compression", a.compression},
                                 {"rocksdb.fold.files.max", a.fold_files_max},
                                 {"fingerprint.bytes", a.fingerprint},
                                 {"claims.format", a.format},
                                 {"rocksdb.write.buffer.size", a.write_buffer}};
  cfg.emplace_back(a.id == "key" ? "id.key" : "id.json", a.id == "key" ? "true" : "/messageId");
  if (!a.filter_bits.empty()) cfg.emplace_back("rocksdb.filter.bits.per.key", a.filter_bits);
  exactly::testing::OwnedConfig config(comp, cfg);
  ex_transform_self self = nullptr;
  ex_error err = exactly::testing::new_error();
  if (vt->create(host.api(), config.get(), &self, &err) != EX_OK) {
    std::fprintf(stderr, "create: %s (%s)\n", err.message, err.key);
    return 1;
  }
  exactly::sdk::Partition p{0, "bench-0", "bench", 0, 0};
  ex_partition abi = p.to_abi();
  if (vt->assign(self, &abi, 1, &err) != EX_OK) {
    std::fprintf(stderr, "assign: %s\n", err.message);
    return 1;
  }

  struct Counter {
    uint64_t kept = 0, rejected = 0;
  } counter;
  ex_emitter em{sizeof(ex_emitter), reinterpret_cast<ex_emitter_ctx>(&counter),
                [](ex_emitter_ctx c, size_t) {
                  ++reinterpret_cast<Counter*>(c)->kept;
                  return int32_t{EX_OK};
                },
                [](ex_emitter_ctx, const ex_record*) { return int32_t{EX_OK}; },
                [](ex_emitter_ctx c, size_t, const char*, size_t) {
                  ++reinterpret_cast<Counter*>(c)->rejected;
                  return int32_t{EX_OK};
                }};

  const uint64_t records = static_cast<uint64_t>(static_cast<double>(a.keys) / (1.0 - a.dup));
  std::vector<std::string> values(a.batch), keys(a.batch);
  std::vector<ex_record> recs(a.batch);
  std::string payload(a.payload, 'p');
  uint64_t distinct = 0, offset = 0, expected_dups = 0, since_round = 0;
  Clock::duration busy{}, in_commit{};
  double cpu = 0, commit_cpu = 0;
  const auto wall0 = Clock::now();
  const double proc0 = process_cpu(), main0 = thread_cpu();
  uint64_t rng = 42;
  while (offset < records) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(a.batch, records - offset));
    for (size_t i = 0; i < n; ++i) {
      rng = splitmix(rng);
      uint64_t which;
      if (distinct > 0 && static_cast<double>(rng >> 11) * 0x1.0p-53 < a.dup) {
        which = splitmix(rng ^ 0x5555) % distinct;  // a repeat of any earlier message
        ++expected_dups;
      } else {
        which = distinct++;
      }
      char id[36];
      uuid_of(which, id);
      std::string& v = values[i];
      v.assign("{\"messageId\":\"");
      v.append(id, 36);
      v.append("\",\"type\":\"track\",\"event\":\"");
      v.append(payload);
      v.append("\"}");
      keys[i].assign(id, 36);
      ex_record& r = recs[i];
      r = ex_record{};
      r.key = exactly::sdk::bytes(keys[i]);
      r.value = exactly::sdk::bytes(v);
      r.partition = 0;
      r.offset = static_cast<int64_t>(offset + i);
      r.timestamp_ms = -1;
    }
    ex_batch b{sizeof(ex_batch), sizeof(ex_record), recs.data(), n};
    auto t0 = Clock::now();
    double c0 = thread_cpu();
    if (vt->process(self, &b, &em, &err) != EX_OK) {
      std::fprintf(stderr, "process: %s\n", err.message);
      return 1;
    }
    offset += n;
    since_round += n;
    if (since_round >= a.round || offset == records) {
      auto k0 = Clock::now();
      double kc0 = thread_cpu();
      if (vt->prepare_commit(self, &err) != EX_OK || vt->commit(self, &err) != EX_OK) {
        std::fprintf(stderr, "commit: %s\n", err.message);
        return 1;
      }
      since_round = 0;
      in_commit += Clock::now() - k0;
      commit_cpu += thread_cpu() - kc0;
    }
    busy += Clock::now() - t0;
    cpu += thread_cpu() - c0;
  }
  const double wall = seconds(Clock::now() - wall0);
  const double rate = static_cast<double>(records) / seconds(busy);
  const double cpu_rate = static_cast<double>(records) / cpu;
  const double rss = peak_rss_mib();
  const double dups = host.metric("dedupe_duplicates_total{partition=bench-0}");
  const double fold_cpu = host.metric("dedupe_fold_cpu_seconds_total{partition=bench-0}");
  const double build_cpu = host.metric("dedupe_filter_build_cpu_seconds_total{partition=bench-0}");
  const double skipped = host.metric("dedupe_lookups_skipped_total{partition=bench-0}");
  vt->destroy(self);  // joins a running fold: its CPU counts
  // Every other thread's CPU (the fold, the filter build, RocksDB's flushes and
  // compactions) is the stage's too: the all-threads rate charges it.
  const double others = (process_cpu() - proc0) - (thread_cpu() - main0);
  const double all_cpu_rate = static_cast<double>(records) / (cpu + others);

  std::printf("dedupe: %" PRIu64 " records, %" PRIu64 " distinct ids, %.0f duplicates dropped "
              "(generated %" PRIu64 "), %" PRIu64 " emitted, %" PRIu64 " rejected\n",
              records, distinct, dups, expected_dups, counter.kept, counter.rejected);
  std::printf("dedupe: %.3f s in the stage (%.3f s of it in prepare_commit+commit; %.3f s wall "
              "with record making; %.3f s CPU of the stage's thread, %.3f s of it in commits)\n",
              seconds(busy), seconds(in_commit), wall, cpu, commit_cpu);
  std::printf("dedupe: %.0f records/s (wall), %.0f records/s (thread CPU), peak RSS %.0f MiB\n",
              rate, cpu_rate, rss);
  std::printf("dedupe: %.3f s CPU on other threads (fold, filter build, RocksDB background); "
              "%.0f records/s (all threads' CPU)\n", others, all_cpu_rate);
  std::printf("dedupe: of it, reported before close: fold %.3f s, presence filter builds %.3f s\n",
              fold_cpu, build_cpu);
  // Records the presence filter did not answer went to RocksDB: duplicates, the filter's
  // false positives, and ids still in the in-memory claim tables.
  std::printf("dedupe: %.0f lookups skipped by the presence filter, %.0f went to RocksDB (%.2f%%)\n",
              skipped, static_cast<double>(records) - skipped,
              100.0 * (static_cast<double>(records) - skipped) / static_cast<double>(records));
  bool correct = counter.kept == distinct && static_cast<uint64_t>(dups) == expected_dups;
  if (!correct) std::printf("dedupe: WRONG RESULT: emitted != distinct or duplicates differ\n");

  // ------------------------------------------------------------ phase 2: readmissing
  exactly::dedupe::StoreTuning tuning;
  tuning.filter = a.filter;
  if (!a.filter_bits.empty()) tuning.filter_bits_per_key = std::stod(a.filter_bits);
  tuning.compression = a.compression;
  tuning.write_buffer_size = std::stoull(a.write_buffer);
  auto cache = rocksdb::NewLRUCache(std::stoull(a.cache));
  const std::string store = (fs::path(a.dir) / "bench-0").string();
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName,
       exactly::dedupe::make_claims_options(tuning, cache, nullptr)},
      {exactly::dedupe::kSeqColumnFamily, exactly::dedupe::make_seq_options(tuning, cache)}};
  std::vector<rocksdb::ColumnFamilyHandle*> h;
  // No automatic compaction while the store is reopened: the lookups below see the
  // store as the stage left it, and the compaction the run left owed is charged in
  // phase 3 instead of running unseen in the background.
  for (auto& cf : cfs) cf.options.disable_auto_compactions = true;
  rocksdb::DB* db = nullptr;
  auto st = rocksdb::DB::Open(exactly::dedupe::make_db_options(tuning), store, cfs, &h, &db);
  if (!st.ok()) {
    std::fprintf(stderr, "reopen: %s\n", st.ToString().c_str());
    return 1;
  }
  // A store of the own format keeps its claims outside RocksDB: the reference is then a
  // RocksDB store holding the same claims as the sst format would have folded them (one
  // SST file per own file, in fold order, with the fold's options).
  rocksdb::DB* ref = db;
  rocksdb::ColumnFamilyHandle* ref_cf = h[0];
  std::unique_ptr<rocksdb::DB> ref_owner;
  uint64_t own_bytes = 0, own_claims = 0;
  {
    std::error_code list_ec;
    auto own = exactly::dedupe::list_claims_files(fs::path(store).string(), list_ec);
    std::erase_if(own, [](const auto& f) { return f.kind != exactly::dedupe::ClaimsFileName::whole; });
    if (!own.empty()) {
      const auto r0 = Clock::now();
      rocksdb::Options ro_opts(exactly::dedupe::make_db_options(tuning), cfs[0].options);
      rocksdb::DB* rdb = nullptr;
      rocksdb::Status rs;
      auto open_reference = [&] {
        ref_owner.reset();
        rs = rocksdb::DB::Open(ro_opts, (fs::path(a.dir) / "reference").string(), &rdb);
        if (!rs.ok()) {
          std::fprintf(stderr, "reference: %s\n", rs.ToString().c_str());
          return false;
        }
        ref_owner.reset(rdb);
        ref = rdb;
        ref_cf = rdb->DefaultColumnFamily();
        return true;
      };
      if (!open_reference()) return 1;
      const rocksdb::Options fo =
          exactly::dedupe::fold_sst_options(ro_opts, exactly::dedupe::fold_compression(tuning));
      for (const auto& [end, path, kind] : own) {
        exactly::dedupe::ClaimsFile f;
        std::string error;
        if (!f.open(path, true, error)) {
          std::fprintf(stderr, "%s\n", error.c_str());
          return 1;
        }
        own_bytes += f.stats().bytes;
        own_claims += f.stats().claims;
        std::vector<std::pair<std::string, std::string>> kv;
        kv.reserve(f.stats().claims);
        f.for_each([&](std::string_view k, const exactly::dedupe::ClaimValue& v) {
          char buf[exactly::dedupe::kMaxClaimValue];
          size_t n = exactly::dedupe::encode_claim(buf, v.seq, v.offset, v.fingerprint, v.fingerprint_bytes);
          kv.emplace_back(std::string(k), std::string(buf, n));
          return true;
        });
        std::sort(kv.begin(), kv.end());
        const std::string sst = (fs::path(a.dir) / ("reference-" + std::to_string(end) + ".sst")).string();
        rocksdb::SstFileWriter w(rocksdb::EnvOptions(), fo, nullptr, /*invalidate_page_cache=*/false);
        rs = w.Open(sst);
        for (size_t i = 0; rs.ok() && i < kv.size(); ++i) rs = w.Put(kv[i].first, kv[i].second);
        if (rs.ok()) rs = w.Finish();
        rocksdb::IngestExternalFileOptions io;
        io.move_files = true;
        io.snapshot_consistency = true;
        const rocksdb::Snapshot* snap = rdb->GetSnapshot();
        if (rs.ok()) rs = rdb->IngestExternalFile({sst}, io);
        rdb->ReleaseSnapshot(snap);
        if (!rs.ok()) {
          std::fprintf(stderr, "reference: %s\n", rs.ToString().c_str());
          return 1;
        }
      }
      // Reopened, as phase 2 reopens a store of the sst format: its table readers load
      // their filters and indexes the same way.
      if (!open_reference()) return 1;
      std::printf("readmissing reference: a RocksDB store made from the run's %zu own claims files "
                  "(%" PRIu64 " claims), one SST each as claims.format sst folds them (%.1f s, not "
                  "counted)\n", own.size(), own_claims, seconds(Clock::now() - r0));
    }
  }
  std::string levels;
  ref->GetProperty(ref_cf, "rocksdb.levelstats", &levels);
  rocksdb::ReadOptions ro = exactly::dedupe::make_lookup_read_options();
  std::string value;
  uint64_t found = 0;
  char key[16];
  auto r0 = Clock::now();
  double rc0 = thread_cpu();
  for (uint64_t i = 0; i < a.reads; ++i) {
    uint64_t x = splitmix(i ^ 0xabcdef), y = splitmix(i + 0x1234567);
    std::memcpy(key, &x, 8);
    std::memcpy(key + 8, &y, 8);
    if (ref->Get(ro, ref_cf, rocksdb::Slice(key, 16), &value).ok()) ++found;
  }
  const double readmissing = static_cast<double>(a.reads) / seconds(Clock::now() - r0);
  const double readmissing_cpu = static_cast<double>(a.reads) / (thread_cpu() - rc0);
  std::printf("readmissing: %" PRIu64 " Get() of absent 16-byte keys: %.0f lookups/s (wall), "
              "%.0f lookups/s (thread CPU), %" PRIu64 " found\n",
              a.reads, readmissing, readmissing_cpu, found);
  std::printf("ratio: dedupe records/s / readmissing lookups/s = %.2f (wall), %.2f (thread CPU)\n",
              rate / readmissing, cpu_rate / readmissing_cpu);
  std::printf("levels of the %s after the run:\n%s", ref == db ? "store" : "reference", levels.c_str());
  ref_owner.reset();

  // ------------------------------------------------------------ phase 3: bytes per key
  // A store that compacts (more than rocksdb.fold.files.max folded files) rewrites every
  // key into its bottom level at least once; a run that ends with files still in level
  // 0 has not paid that yet. Compacting everything once now, with its CPU measured,
  // charges that lower bound. A store that is still a row of folded files owes nothing.
  int64_t compacting = 0;
  {
    exactly::dedupe::FoldFiles f = exactly::dedupe::inspect_fold_files(db, h[0]);
    compacting = f.unlabelled || f.files.size() > std::stoull(a.fold_files_max);
    std::printf("store after the run: %zu folded files, %s\n", f.files.size(),
                compacting ? "compacting" : "not compacting (row of folded files)");
  }
  // The sequence index compacts as any store: folded chunks shrink to their times and
  // the old versions go; that is owed too.
  const double debt0 = process_cpu();
  db->Flush(rocksdb::FlushOptions(), h);
  rocksdb::CompactRangeOptions cro;
  cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kSkip;
  if (compacting) db->CompactRange(cro, h[0], nullptr, nullptr);
  db->CompactRange(cro, h[1], nullptr, nullptr);
  const double debt = process_cpu() - debt0;
  std::printf("compaction owed at the end of the run (the sequence index; %s): %.3f s CPU; "
              "%.0f records/s (all threads' CPU including it)\n",
              compacting ? "and every claim rewritten once into the bottom level"
                         : "no claim is rewritten",
              debt, static_cast<double>(records) / (cpu + others + debt));
  rocksdb::TablePropertiesCollection tables;
  db->GetPropertiesOfAllTables(h[0], &tables);
  rocksdb::TableProperties sum;
  for (auto& [name, t] : tables) sum.Add(*t);
  const double n_entries = static_cast<double>(sum.num_entries ? sum.num_entries : 1);
  std::printf("claims SST, per entry: %.2f data (raw key %.2f incl. 8 of RocksDB's own, raw "
              "value %.2f), %.2f index, %.2f filter\n",
              static_cast<double>(sum.data_size) / n_entries,
              static_cast<double>(sum.raw_key_size) / n_entries,
              static_cast<double>(sum.raw_value_size) / n_entries,
              static_cast<double>(sum.index_size) / n_entries,
              static_cast<double>(sum.filter_size) / n_entries);
  uint64_t claims_sst = 0, seq_sst = 0;
  db->GetIntProperty(h[0], "rocksdb.total-sst-files-size", &claims_sst);
  db->GetIntProperty(h[1], "rocksdb.total-sst-files-size", &seq_sst);
  for (auto* x : h) db->DestroyColumnFamilyHandle(x);
  db->Close();
  delete db;
  const uint64_t all = dir_bytes(store), sst = dir_bytes(store, ".sst");
  const double k = static_cast<double>(distinct);
  std::printf("disk: %.2f bytes/key in claims and SST files (claims %.2f: %s; sequence index "
              "%.2f), %.2f bytes/key for the whole store directory (%" PRIu64 " bytes)\n",
              static_cast<double>(sst + own_bytes) / k, static_cast<double>(claims_sst + own_bytes) / k,
              own_bytes ? "own claims files" : "SST", static_cast<double>(seq_sst) / k,
              static_cast<double>(all) / k, all);
  if (!a.keep) fs::remove_all(a.dir);
  return correct ? 0 : 1;
}
