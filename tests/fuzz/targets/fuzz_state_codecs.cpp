// What exactly reads back from its own state, which a disk fault or a foreign writer can
// corrupt: dedupe's chunk records (the store's and the changelog topic's), its store
// meta, claim values and changelog keys, the Redis claim values, the kafka checkpoint a
// sink stores with its output, and the file sink's commit record. The first byte picks
// the decoder. A decoder must refuse what it cannot read, never read past it or hit
// undefined behaviour; a checkpoint it accepts must encode back to the same bytes (the
// format is canonical).
#include "changelog_codec.hpp"
#include "checkpoint_codec.hpp"
#include "claim_codec.hpp"
#include "commit_record.hpp"
#include "redis_encoding.hpp"

#include <cstdlib>

using namespace exactly;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view v(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 7) {
    case 0: {
      dedupe::ChunkView c;
      if (!dedupe::parse_chunk(v, c) || c.folded) break;
      const uint64_t first = v.size() > 8 ? dedupe::seq_from_key(v.substr(0, 8)) : v.size();
      size_t bytes = 0;
      dedupe::for_each_chunk_claim(c, first, [&](uint64_t, std::string_view key, int64_t, uint64_t) {
        bytes += key.size();
      });
      if (bytes > v.size()) std::abort();  // a key reaching past the chunk
      break;
    }
    case 1: {
      dedupe::StoreMeta m;
      (void)m.decode(v);
      break;
    }
    case 2: {
      dedupe::ClaimValue c;
      if (dedupe::decode_claim(v, c) && c.fingerprint_bytes > 8) std::abort();
      uint64_t seq = 0;
      (void)dedupe::decode_claim_seq(v, seq);
      break;
    }
    case 3: {
      // The partition name is the input up to its first NUL, as a key of its own would be.
      const size_t nul = v.find('\0');
      const std::string_view part = nul == std::string_view::npos ? v : v.substr(0, nul);
      dedupe::ChangelogKey k;
      (void)dedupe::parse_changelog_key(v, part, k);
      break;
    }
    case 4: {
      uint32_t bytes = 0;
      (void)dedupe::redis::stored_fingerprint(v, bytes);
      (void)dedupe::redis::owner_offset(v);
      if (bytes > 8) std::abort();
      break;
    }
    case 5: {
      auto cp = kafka::decode_checkpoint(v);
      if (cp && kafka::encode_checkpoint(*cp) != v) std::abort();
      break;
    }
    case 6: {
      file::CommitRecord r;
      (void)file::CommitRecord::decode(std::string(v), "out.jsonl.commit", r);
      break;
    }
  }
  return 0;
}
