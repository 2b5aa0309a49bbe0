// The file sink's sidecar `<path>.commit`: the committed output length and the source
// positions that go with it. Replaced atomically on every commit, so output length and
// positions can never disagree after a crash. v2 adds the identity of the output file;
// v1 records (without it) are still read.
#pragma once

#include <exactly/sdk.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace exactly::file {

// Which file the committed length is of (st_dev, st_ino): a path renamed away (logrotate)
// and a new file in its place are told apart from the file cut short.
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  bool operator==(const FileIdentity& o) const { return device == o.device && inode == o.inode; }
  bool operator!=(const FileIdentity& o) const { return !(*this == o); }
};

struct CommitRecord {
  uint64_t length = 0;
  std::optional<sdk::Checkpoint> positions;
  std::optional<FileIdentity> file;  // absent in records written before v2

  std::string encode() const;
  // Fails (fatal) on a damaged or foreign file rather than guessing.
  static sdk::Status decode(const std::string& text, const std::string& path, CommitRecord& out);
};

}  // namespace exactly::file
