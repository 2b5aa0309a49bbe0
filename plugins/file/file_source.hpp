// The `file` source: JSON lines from one file, one record per line. The file is one
// partition ("file:<basename>"); a record's offset is the byte offset of its line's last
// byte, so that offset + 1 is where the source resumes after it.
#pragma once

#include <exactly/sdk.hpp>

#include "file_settings.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace exactly::file {

inline constexpr const char* kSourceFormat = "file.v1";

class FileSource final : public sdk::Source {
 public:
  FileSource(sdk::Host host, const sdk::Config& config);
  // The create-time checks without opening the file (ABI 1.3).
  static sdk::Status validate(const sdk::Config& config);
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  sdk::Status open(const std::optional<sdk::Checkpoint>& resume) override;
  sdk::Status poll(int timeout_ms, std::vector<ex_record>& out, bool& end_of_input) override;
  sdk::Status checkpoint(sdk::Checkpoint& out) override;
  sdk::Status commit(const sdk::Checkpoint& positions) override;
  sdk::Status rewind(const sdk::Checkpoint& positions) override;

 private:
  FileSource(sdk::Host host, SourceSettings s);
  // A position: the next byte offset and, when stored by this version, the fingerprint of
  // the bytes before it (none in positions stored before fingerprints were).
  struct Position {
    uint64_t offset = 0;
    std::optional<uint64_t> fingerprint;
  };
  sdk::Status parse_position(const sdk::Checkpoint& cp, Position& out) const;
  // Takes <offsets.path>.lock for this source's life (refuses a second source on it).
  sdk::Status lock_offsets();
  // Seeks to a stored position, refusing (a config error: a restart cannot change it) a
  // position past the end of the file or whose preceding bytes are no longer the ones
  // read there: the file was replaced or rewritten, and reading on would lose lines
  // or hand out the torn end of one.
  sdk::Status seek_to(const Position& at, const char* stored_where);
  sdk::Status seek(uint64_t offset);
  // The fingerprint of the up to kFingerprintBytes before `offset` (0 at offset 0).
  sdk::Status fingerprint_at(uint64_t offset, uint64_t& out) const;
  // While following, at the end of the bytes: a file cut shorter, or another file renamed
  // over the path, is refused (its lines would be skipped, or never read).
  sdk::Status check_still_same_file() const;
  // Appends complete lines from the buffer to `out`, up to batch_size_; refuses a line
  // over max_line_bytes_ (check_line).
  sdk::Status take_lines(std::vector<ex_record>& out);
  sdk::Status check_line(size_t bytes) const;
  // Line [begin, end) of the buffer; the source resumes at `next` after it.
  void emit(std::vector<ex_record>& out, size_t begin, size_t end, size_t next);

  sdk::Host host_;
  std::string path_;
  bool follow_;
  size_t batch_size_;
  size_t max_line_bytes_;
  std::string offsets_path_;  // optional store of our own committed position
  int fd_ = -1;
  int offsets_lock_fd_ = -1;  // flock on <offsets.path>.lock while this source lives
  bool announced_ = false;

  // buf_[0..len_) holds file bytes starting at file offset buf_offset_; lines before
  // pos_ were handed out in the current batch. The buffer is only moved or grown at
  // the start of a poll, when the previous batch's views may die.
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0;
  size_t len_ = 0;
  size_t pos_ = 0;
  // [pos_, scanned_) holds no '\n': a long line is searched once as it arrives, not again
  // from its start after every read (quadratic in the line) or every follow interval.
  size_t scanned_ = 0;
  uint64_t buf_offset_ = 0;
};

}  // namespace exactly::file
