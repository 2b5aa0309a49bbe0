#include "claim_fold.hpp"

#include "claim_codec.hpp"

#include <rocksdb/sst_file_writer.h>

#include <cstdio>

namespace exactly::dedupe {

rocksdb::Status fold_claims(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                            const rocksdb::Options& sst_options, const std::string& path,
                            const RoundClaims& table, const std::vector<uint32_t>& live,
                            uint32_t fp_bytes, KeyOrder& key_order,
                            const std::function<void(double)>& pace) {
  const auto& claims = table.claims();
  const auto& order = key_order.sort_entries(
      live.size(), [&](size_t i) { return live[i]; },
      [&](uint32_t c) { return table.key_of(claims[c]); },
      [&](uint32_t c) { return static_cast<uint32_t>(claims[c].key_pos); });
  // Keep the new file in the page cache: it is read right away (duplicates, filter
  // false positives).
  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), sst_options, cf,
                                /*invalidate_page_cache=*/false);
  rocksdb::Status st = writer.Open(path);
  char buf[kMaxClaimValue];
  // Key order is a random walk over the table: fetch a few claims and keys ahead. The
  // entries carry where each key lives, so both fetches start without waiting for the
  // claim (its low 32 bits: past 4 GiB of keys a prefetch loads a wrong line, a miss
  // and no more).
  constexpr size_t kAhead = 24;
  const char* arena = table.arena_data();
  for (size_t j = 0; j < kAhead && j < order.size(); ++j)
    prefetch_claim_and_key(&claims[order[j].index], arena + order[j].aux);
  for (size_t j = 0; st.ok() && j < order.size(); ++j) {
    if (j + kAhead < order.size())
      prefetch_claim_and_key(&claims[order[j + kAhead].index], arena + order[j + kAhead].aux);
    if (pace && (j & 8191) == 0) pace(static_cast<double>(j) / static_cast<double>(order.size()));
    const auto& c = claims[order[j].index];
    size_t n = encode_claim(buf, c.seq, c.offset, c.fingerprint, fp_bytes);
    auto k = table.key_of(c);
    st = writer.Put(rocksdb::Slice(k.data(), k.size()), rocksdb::Slice(buf, n));
  }
  if (st.ok()) st = writer.Finish();
  if (st.ok()) {
    rocksdb::IngestExternalFileOptions ingest;
    ingest.move_files = true;
    // A file that overlaps nothing older would be placed below level 0 with sequence
    // number 0, i.e. as the oldest file, out of fold order; a snapshot that exists
    // during the ingestion makes RocksDB give it the newest sequence number in level 0,
    // so files stay in fold order and the oldest can be dropped whole (fold_files.hpp).
    // It is released at once: a lasting one would keep old versions from compactions.
    ingest.snapshot_consistency = true;
    const rocksdb::Snapshot* in_fold_order = db->GetSnapshot();
    st = db->IngestExternalFile(cf, {path}, ingest);
    db->ReleaseSnapshot(in_fold_order);
  }
  if (!st.ok()) std::remove(path.c_str());
  return st;
}

}  // namespace exactly::dedupe
