#include "file_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <thread>

#include "fs_util.hpp"

#include <exactly/durable_file.hpp>

namespace exactly::file {

using sdk::Status;

namespace {
constexpr size_t kInitialBuffer = 1 << 20;
// How often a following source looks for appended bytes while it waits.
constexpr auto kFollowInterval = std::chrono::milliseconds(20);
}  // namespace

FileSource::FileSource(sdk::Host host, const sdk::Config& config)
    : FileSource(host, SourceSettings::parse(config)) {}

FileSource::FileSource(sdk::Host host, SourceSettings s)
    : host_(host), path_(std::move(s.path)), follow_(s.follow), batch_size_(s.batch_size),
      max_line_bytes_(s.max_line_bytes), offsets_path_(std::move(s.offsets_path)) {}

Status FileSource::validate(const sdk::Config& config) {
  SourceSettings::parse(config);
  return Status::ok();
}

FileSource::~FileSource() {
  if (fd_ >= 0) ::close(fd_);
}

Status FileSource::parse_offset(const sdk::Checkpoint& cp, uint64_t& out) const {
  if (cp.format != kSourceFormat)
    return Status::error(EX_ERR_CONFIG, "positions have format '" + cp.format +
                                            "', the file source reads '" + kSourceFormat +
                                            "': they were stored by another source");
  auto [p, ec] = std::from_chars(cp.data.data(), cp.data.data() + cp.data.size(), out);
  if (ec != std::errc() || p != cp.data.data() + cp.data.size())
    return Status::fatal("corrupt file.v1 position '" + cp.data + "'");
  return Status::ok();
}

Status FileSource::open(const std::optional<sdk::Checkpoint>& resume) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return Status::error(EX_ERR_CONFIG, errno_text("cannot open", path_), "path");
  // A directory opens fine and fails only at read() (EISDIR), which was retried for ever.
  struct stat sb {};
  if (::fstat(fd_, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    return Status::error(EX_ERR_CONFIG, path_ + " is a directory, not a file of lines", "path");
  }
  if (!buf_) {
    cap_ = kInitialBuffer;
    buf_ = std::make_unique<char[]>(cap_);
  }
  uint64_t start = 0;
  if (resume) {
    Status st = parse_offset(*resume, start);
    if (!st) return st;
  } else if (!offsets_path_.empty()) {
    std::optional<std::string> text;
    Status st = read_whole(offsets_path_, text);
    if (!st) return st;
    if (text) {
      st = parse_offset(sdk::Checkpoint{kSourceFormat, *text}, start);
      if (!st) return st;
    }
  }
  return seek(start);
}

Status FileSource::seek(uint64_t offset) {
  if (fd_ < 0) return Status::fatal("file source used before open");
  struct stat sb {};
  if (::fstat(fd_, &sb) != 0) return Status::fatal(errno_text("cannot stat", path_));
  if (offset > static_cast<uint64_t>(sb.st_size))
    return Status::fatal("position " + std::to_string(offset) + " is past the end of " + path_ +
                         " (" + std::to_string(sb.st_size) +
                         " bytes): the file was truncated or replaced");
  if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0)
    return Status::fatal(errno_text("cannot seek", path_));
  buf_offset_ = offset;
  len_ = pos_ = scanned_ = 0;
  return Status::ok();
}

void FileSource::emit(std::vector<ex_record>& out, size_t begin, size_t end) {
  ex_record r{};
  r.key = sdk::null_bytes();
  r.value = ex_bytes{reinterpret_cast<const uint8_t*>(buf_.get() + begin), end - begin};
  r.partition = 0;
  r.offset = static_cast<int64_t>(buf_offset_ + begin);
  r.timestamp_ms = -1;
  out.push_back(r);
}

Status FileSource::take_lines(std::vector<ex_record>& out) {
  while (out.size() < batch_size_ && pos_ < len_) {
    const size_t from = std::max(pos_, scanned_);
    auto* nl = static_cast<char*>(std::memchr(buf_.get() + from, '\n', len_ - from));
    if (nl == nullptr) {
      scanned_ = len_;
      return check_line(len_ - pos_);
    }
    size_t end = static_cast<size_t>(nl - buf_.get());
    Status st = check_line(end - pos_);
    if (!st) return st;
    emit(out, pos_, end);
    pos_ = end + 1;
  }
  return Status::ok();
}

// A line over max.line.bytes stops the pipeline (a config-class error: restarting would
// meet it again) instead of growing the buffer until the host runs out of memory.
Status FileSource::check_line(size_t bytes) const {
  if (bytes <= max_line_bytes_) return Status::ok();
  return Status::error(EX_ERR_CONFIG,
                       "the line at byte offset " + std::to_string(buf_offset_ + pos_) + " of " +
                           path_ + " is over max.line.bytes=" + std::to_string(max_line_bytes_) +
                           " (no line break within that many bytes): raise max.line.bytes or "
                           "fix the file",
                       "max.line.bytes");
}

Status FileSource::poll(int timeout_ms, std::vector<ex_record>& out, bool& end_of_input) {
  if (fd_ < 0) return Status::fatal("file source polled before open");
  if (!announced_) {
    sdk::Partition part;
    part.id = 0;
    part.name = "file:" + base_name(path_);
    part.topic = "file";
    part.number = 0;
    part.start_offset = static_cast<int64_t>(buf_offset_ + pos_);
    Status st = host_.assigned({part});
    if (!st) return st;
    announced_ = true;
  }
  // The previous batch is dead now: keep only the unconsumed tail.
  if (pos_ > 0) {
    std::memmove(buf_.get(), buf_.get() + pos_, len_ - pos_);
    len_ -= pos_;
    buf_offset_ += pos_;
    scanned_ = scanned_ > pos_ ? scanned_ - pos_ : 0;
    pos_ = 0;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool at_eof = false;
  for (;;) {
    // An over-long line is reported once the lines before it are handed out: the next
    // poll meets it first, so the error's offset is the first byte not handed out.
    Status taken = take_lines(out);
    if (!taken) {
      if (out.empty()) return taken;
      break;
    }
    if (out.size() >= batch_size_) break;
    if (len_ == cap_) {
      if (!out.empty()) break;  // growing would move bytes this batch points into
      size_t bigger = cap_ * 2;
      auto grown = std::make_unique<char[]>(bigger);
      std::memcpy(grown.get(), buf_.get(), len_);
      buf_ = std::move(grown);
      cap_ = bigger;
    }
    ssize_t n = ::read(fd_, buf_.get() + len_, cap_ - len_);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::retriable(errno_text("cannot read", path_));
    }
    if (n > 0) {
      len_ += static_cast<size_t>(n);
      continue;
    }
    if (!follow_) {
      // A last line without '\n' is complete once the file is known to be finished.
      if (pos_ < len_) {
        Status st = check_line(len_ - pos_);
        if (!st) {
          if (out.empty()) return st;
          break;
        }
        emit(out, pos_, len_);
        pos_ = len_;
      }
      at_eof = true;
      break;
    }
    // Following: a partial last line waits for its '\n'.
    if (!out.empty() || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(kFollowInterval,
                                                      deadline - std::chrono::steady_clock::now()));
  }
  end_of_input = at_eof && out.empty();
  if (!out.empty()) host_.counter("file_source_records_total", static_cast<double>(out.size()));
  return Status::ok();
}

Status FileSource::checkpoint(sdk::Checkpoint& out) {
  out.format = kSourceFormat;
  out.data = std::to_string(buf_offset_ + pos_);
  return Status::ok();
}

Status FileSource::commit(const sdk::Checkpoint& positions) {
  if (offsets_path_.empty()) return Status::ok();
  uint64_t offset = 0;
  Status st = parse_offset(positions, offset);
  if (!st) return st;
  return sdk::replace_file_atomically(offsets_path_, positions.data, true);
}

Status FileSource::rewind(const sdk::Checkpoint& positions) {
  uint64_t offset = 0;
  Status st = parse_offset(positions, offset);
  if (!st) return st;
  return seek(offset);
}

}  // namespace exactly::file
