// The `file` sink: one line per record value. Each round's output becomes visible
// atomically with the source positions through the `<path>.commit` sidecar; anything
// past the committed length is an unfinished round and is cut off on open/abort. A path
// renamed away between rounds (logrotate) is followed into a new file.
#pragma once

#include <exactly/sdk.hpp>

#include "file_settings.hpp"

#include <cstdint>
#include <optional>
#include <string>

#include "commit_record.hpp"

namespace exactly::file {

class FileSink final : public sdk::Sink {
 public:
  FileSink(sdk::Host host, const sdk::Config& config);
  // The create-time checks without opening the file (ABI 1.3).
  static sdk::Status validate(const sdk::Config& config);
  ~FileSink() override;
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  sdk::Status open(std::optional<sdk::Checkpoint>& stored) override;
  sdk::Status write(const sdk::Batch& in, const sdk::RecordErrors& errors) override;
  sdk::Status prepare_commit() override;
  sdk::Status commit(const sdk::Checkpoint* positions, bool& stored_positions) override;
  sdk::Status abort() override;

 private:
  FileSink(sdk::Host host, SinkSettings s);
  sdk::Status flush();
  sdk::Status truncate_to(uint64_t length);
  // Between rounds: a path renamed away or removed (logrotate) is followed into a new file;
  // a file cut below its committed length (copytruncate) stops the pipeline.
  sdk::Status follow_rotation();

  sdk::Host host_;
  std::string path_;
  std::string commit_path_;
  bool fsync_;
  bool json_;  // format: json
  int fd_ = -1;
  std::string buffer_;       // written but not yet handed to the kernel
  uint64_t end_ = 0;         // file length including everything flushed
  uint64_t synced_ = 0;      // file length known durable
  uint64_t committed_ = 0;   // file length recorded in the sidecar
  uint64_t round_records_ = 0;
  FileIdentity file_;                       // of fd_, as in the commit record
  std::optional<sdk::Checkpoint> positions_;  // in the commit record now
};

}  // namespace exactly::file
