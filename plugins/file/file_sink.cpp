#include "file_sink.hpp"
#include "json_line.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fs_util.hpp"

#include <exactly/durable_file.hpp>

namespace exactly::file {

using sdk::Status;

namespace {
// Bytes buffered before they go to the kernel; bounds memory, keeps write() calls few.
constexpr size_t kFlushThreshold = 1 << 20;

FileIdentity identity_of(const struct stat& sb) {
  return FileIdentity{static_cast<uint64_t>(sb.st_dev), static_cast<uint64_t>(sb.st_ino)};
}

// Opens (creating) `path` for the sink, locked. One sink per file: two (two pipelines, a
// dead-letter sink on the main sink's path, two hosts) interleaved their records and
// replaced each other's commit records, and each resumed from the other's positions. The
// lock goes with the descriptor, so a sink that dies, or is rebuilt, lets go of it.
Status open_locked(const std::string& path, int& out) {
  return open_exclusive(path, "path",
                        path + " is in use by another file sink (another pipeline or dead-letter "
                               "sink, or another exactly process): two sinks on one file would "
                               "overwrite each other's records and commits",
                        out);
}
}  // namespace

FileSink::FileSink(sdk::Host host, const sdk::Config& config)
    : FileSink(host, SinkSettings::parse(config)) {}

FileSink::FileSink(sdk::Host host, SinkSettings s)
    : host_(host), path_(std::move(s.path)), commit_path_(path_ + ".commit"), fsync_(s.fsync), json_(s.json) {}

Status FileSink::validate(const sdk::Config& config) {
  const SinkSettings s = SinkSettings::parse(config);
  // The file is made at open, its directory is not: a missing one passed validate and
  // failed the pipeline at its first start (QA: a dead-letter file's).
  const std::string dir = dir_of(s.path);
  struct stat sb{};
  if (::stat(dir.c_str(), &sb) != 0)
    return Status::error(EX_ERR_CONFIG, errno_text("cannot use the directory", dir) + " (of " + s.path + ")", "path");
  if (!S_ISDIR(sb.st_mode))
    return Status::error(EX_ERR_CONFIG, dir + " (the directory of " + s.path + ") is not a directory", "path");
  return Status::ok();
}

FileSink::~FileSink() {
  // Unflushed bytes belong to an uncommitted round: dropping them is the point.
  if (fd_ >= 0) ::close(fd_);
}

Status FileSink::open(std::optional<sdk::Checkpoint>& stored) {
  stored.reset();
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  buffer_.clear();
  Status st = open_locked(path_, fd_);
  if (!st) return st;
  std::optional<std::string> text;
  st = read_whole(commit_path_, text);
  if (!st) return st;

  CommitRecord rec;
  struct stat sb {};
  if (::fstat(fd_, &sb) != 0) return Status::fatal(errno_text("cannot stat", path_));
  auto size = static_cast<uint64_t>(sb.st_size);

  const FileIdentity id = identity_of(sb);
  if (text) {
    st = CommitRecord::decode(*text, commit_path_, rec);
    if (!st) return st;
    if (rec.file && *rec.file != id) {
      // Not the file the record is of: the path was renamed away (logrotate) after the last
      // commit, while exactly was stopped or in the round a crash ended. What the new file
      // holds is someone else's; we go on after it, with the same positions.
      host_.info(path_ + " is another file than at the last commit (rotated): its " +
                 std::to_string(size) + " bytes are kept and output goes on after them");
      rec.length = size;
      rec.file = id;
      st = sdk::replace_file_atomically(commit_path_, rec.encode(), fsync_);
      if (!st) return st;
    }
  } else {
    // First run on this path: whatever the file holds already is someone's data, not an
    // unfinished round of ours. Record it as committed before writing anything, so a
    // crash before our first commit cuts back to exactly this.
    rec.length = size;
    rec.file = id;
    st = sdk::replace_file_atomically(commit_path_, rec.encode(), fsync_);
    if (!st) return st;
  }
  if (size < rec.length)
    // The operator's to decide (a restart cannot change it): the pipeline stops.
    return Status::error(EX_ERR_CONFIG,
                         path_ + " is shorter (" + std::to_string(size) +
                             " bytes) than its committed length (" + std::to_string(rec.length) +
                             "): it was truncated or replaced outside exactly; remove " +
                             commit_path_ + " to start over",
                         "path");
  if (size > rec.length)
    host_.info("dropping " + std::to_string(size - rec.length) +
               " uncommitted bytes at the end of " + path_);
  st = truncate_to(rec.length);  // also positions the fd at the committed end
  if (!st) return st;
  end_ = synced_ = committed_ = rec.length;
  file_ = id;
  positions_ = rec.positions;
  stored = rec.positions;
  return Status::ok();
}

Status FileSink::follow_rotation() {
  struct stat now {};
  const bool exists = ::stat(path_.c_str(), &now) == 0;
  if (!exists && errno != ENOENT) return Status::fatal(errno_text("cannot stat", path_));
  if (exists && identity_of(now) == file_) {
    struct stat mine {};
    if (::fstat(fd_, &mine) != 0) return Status::fatal(errno_text("cannot stat", path_));
    if (static_cast<uint64_t>(mine.st_size) < committed_)
      // Writing on at our offset would leave a hole of zero bytes before the next line.
      return Status::error(EX_ERR_CONFIG,
                           path_ + " was cut to " + std::to_string(mine.st_size) +
                               " bytes, below its committed length (" + std::to_string(committed_) +
                               "), while exactly wrote it (logrotate's copytruncate?): rotate "
                               "by renaming (logrotate without copytruncate), or remove " +
                               commit_path_ + " to start over",
                           "path");
    return Status::ok();
  }
  // Renamed away or removed: the committed rounds stay in the old file, and output goes on
  // in a new one at `path`. The commit record names the new file before anything is
  // written to it, so a crash from here on cuts back to where this file started.
  int fd = -1;
  Status st = open_locked(path_, fd);
  if (!st) return st;
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) {
    ::close(fd);
    return Status::fatal(errno_text("cannot stat", path_));
  }
  CommitRecord rec;
  rec.length = static_cast<uint64_t>(sb.st_size);
  rec.positions = positions_;
  rec.file = identity_of(sb);
  st = sdk::replace_file_atomically(commit_path_, rec.encode(), fsync_);
  if (!st || ::lseek(fd, static_cast<off_t>(rec.length), SEEK_SET) < 0) {
    ::close(fd);
    return st ? Status::fatal(errno_text("cannot seek", path_)) : st;
  }
  ::close(fd_);
  fd_ = fd;
  file_ = *rec.file;
  end_ = synced_ = committed_ = rec.length;
  host_.info(path_ + " was renamed away or removed (rotated): output goes on in a new " + path_);
  host_.counter("file_sink_rotations_total", 1);
  return Status::ok();
}

Status FileSink::write(const sdk::Batch& in, const sdk::RecordErrors& errors) {
  if (fd_ < 0) return Status::fatal("write before open");
  if (end_ == committed_ && buffer_.empty()) {  // nothing of this round in the file yet
    Status st = follow_rotation();
    if (!st) return st;
  }
  for (size_t i = 0; i < in.size(); ++i) {
    if (json_) {  // any record fits on one line
      append_json_record(buffer_, in[i]);
      buffer_.push_back('\n');
      ++round_records_;
      continue;
    }
    std::string_view v = sdk::view(in[i].value);
    // A newline inside a value would split one record into two lines on read-back.
    // (An empty value, a tombstone's included, may have no data pointer at all.)
    if (!v.empty() && std::memchr(v.data(), '\n', v.size()) != nullptr) {
      errors.reject(i, "value contains a newline; the file sink writes one record per line");
      continue;
    }
    buffer_.append(v);
    buffer_.push_back('\n');
    ++round_records_;
  }
  if (buffer_.size() >= kFlushThreshold) return flush();
  return Status::ok();
}

Status FileSink::flush() {
  if (buffer_.empty()) return Status::ok();
  Status st = write_all(fd_, buffer_.data(), buffer_.size(), path_);
  if (!st) return st;
  end_ += buffer_.size();
  buffer_.clear();
  return Status::ok();
}

Status FileSink::prepare_commit() {
  if (fd_ < 0) return Status::fatal("commit before open");
  Status st = flush();
  if (!st) return st;
  if (fsync_ && synced_ != end_) {
    // After a failed fsync the page cache state is unknown: rebuild from the sidecar.
    if (::fdatasync(fd_) != 0) return Status::fatal(errno_text("cannot fsync", path_));
  }
  synced_ = end_;
  return Status::ok();
}

Status FileSink::commit(const sdk::Checkpoint* positions, bool& stored_positions) {
  // The data must be durable before the sidecar claims it.
  Status st = prepare_commit();
  if (!st) return st;
  CommitRecord rec;
  rec.length = end_;
  rec.file = file_;
  if (positions != nullptr) rec.positions = *positions;
  st = sdk::replace_file_atomically(commit_path_, rec.encode(), fsync_);
  if (!st) return st;
  host_.counter("file_sink_bytes_total", static_cast<double>(end_ - committed_));
  host_.counter("file_sink_records_total", static_cast<double>(round_records_));
  committed_ = end_;
  positions_ = rec.positions;
  round_records_ = 0;
  stored_positions = positions != nullptr;
  return Status::ok();
}

Status FileSink::abort() {
  buffer_.clear();
  round_records_ = 0;
  if (fd_ < 0) return Status::ok();
  return truncate_to(committed_);
}

Status FileSink::truncate_to(uint64_t length) {
  if (::ftruncate(fd_, static_cast<off_t>(length)) != 0)
    return Status::fatal(errno_text("cannot truncate", path_));
  if (::lseek(fd_, static_cast<off_t>(length), SEEK_SET) < 0)
    return Status::fatal(errno_text("cannot seek", path_));
  end_ = length;
  if (synced_ > length) synced_ = length;
  return Status::ok();
}

}  // namespace exactly::file
