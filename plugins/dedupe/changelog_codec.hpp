// Records of a dedupe changelog (one Kafka record per chunk of a round, plus one meta
// record per partition and round). The changelog is compacted: a chunk's key is its
// first sequence number, so evicting the chunk writes a tombstone under the same key,
// and the meta record's key is fixed, so only the newest survives. Keys start with the
// input partition's name, so partitions of several input topics can share a changelog
// partition.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "claim_codec.hpp"

namespace exactly::dedupe {

// Rounds are cut into chunks of at most this many bytes: well below the broker's
// default 1 MiB message limit, and large enough that per-record framing is noise.
inline constexpr size_t kMaxChunkBytes = 512 * 1024;

enum class ChangelogKind : char { chunk = 'c', meta = 'm' };

inline std::string changelog_key(std::string_view partition, ChangelogKind kind, uint64_t seq = 0) {
  std::string k;
  k.reserve(partition.size() + 10);
  k.append(partition);
  k.push_back('\0');
  k.push_back(static_cast<char>(kind));
  if (kind == ChangelogKind::chunk) k += seq_key(seq);
  return k;
}

struct ChangelogKey {
  ChangelogKind kind = ChangelogKind::meta;
  uint64_t seq = 0;
};

// False when the key belongs to another partition or is not a changelog key.
inline bool parse_changelog_key(std::string_view key, std::string_view partition, ChangelogKey& out) {
  if (key.size() < partition.size() + 2 || key.compare(0, partition.size(), partition) != 0 ||
      key[partition.size()] != '\0')
    return false;
  std::string_view rest = key.substr(partition.size() + 1);
  if (rest[0] == static_cast<char>(ChangelogKind::meta) && rest.size() == 1) {
    out.kind = ChangelogKind::meta;
    return true;
  }
  if (rest[0] == static_cast<char>(ChangelogKind::chunk) && rest.size() == 9) {
    out.kind = ChangelogKind::chunk;
    out.seq = seq_from_key(rest.substr(1));
    return true;
  }
  return false;
}

}  // namespace exactly::dedupe
