// The file sink's sidecar `<path>.commit`: the committed output length and the source
// positions that go with it. Replaced atomically on every commit, so output length and
// positions can never disagree after a crash.
#pragma once

#include <exactly/sdk.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace exactly::file {

struct CommitRecord {
  uint64_t length = 0;
  std::optional<sdk::Checkpoint> positions;

  std::string encode() const;
  // Fails (fatal) on a damaged or foreign file rather than guessing.
  static sdk::Status decode(const std::string& text, const std::string& path, CommitRecord& out);
};

}  // namespace exactly::file
