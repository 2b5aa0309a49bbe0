#include "file_source.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
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
// The bytes before a position that its fingerprint covers: a line or two of JSON, which a
// replaced or rewritten file does not repeat at the same offset.
constexpr size_t kFingerprintBytes = 64;

// FNV-1a, 64 bits: a change detector, not a defence against a crafted file.
uint64_t fnv1a(const char* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// A position's text: "OFFSET" (stored before fingerprints) or "OFFSET:FINGERPRINT" (hex).
std::string position_text(uint64_t offset, uint64_t fingerprint) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fingerprint));
  return std::to_string(offset) + ":" + hex;
}
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
  if (offsets_lock_fd_ >= 0) ::close(offsets_lock_fd_);
}

// One source per offsets.path: two (two pipelines, two hosts) each resumed from the
// other's position and skipped what the other had read, silently. offsets.path itself is
// replaced by rename at each commit, so the lock is on a file beside it that stays put;
// it goes with the descriptor, so a source that dies, or is rebuilt, lets go of it.
Status FileSource::lock_offsets() {
  if (offsets_path_.empty() || offsets_lock_fd_ >= 0) return Status::ok();
  return open_exclusive(offsets_path_ + ".lock", "offsets.path",
                        offsets_path_ + " is in use by another file source (another pipeline or "
                                        "another exactly process): two sources on one "
                                        "offsets.path would each resume from the other's "
                                        "position and skip lines",
                        offsets_lock_fd_);
}

Status FileSource::parse_position(const sdk::Checkpoint& cp, Position& out) const {
  if (cp.format != kSourceFormat)
    return Status::error(EX_ERR_CONFIG, "positions have format '" + cp.format +
                                            "', the file source reads '" + kSourceFormat +
                                            "': they were stored by another source");
  const char* b = cp.data.data();
  const char* e = b + cp.data.size();
  auto [p, ec] = std::from_chars(b, e, out.offset);
  out.fingerprint.reset();
  if (ec == std::errc() && p != e && *p == ':') {
    uint64_t fp = 0;
    auto [q, ec2] = std::from_chars(p + 1, e, fp, 16);
    if (ec2 == std::errc() && q == e && e - (p + 1) == 16) {
      out.fingerprint = fp;
      return Status::ok();
    }
  } else if (ec == std::errc() && p == e) {
    return Status::ok();
  }
  return Status::fatal("corrupt file.v1 position '" + cp.data + "'");
}

Status FileSource::fingerprint_at(uint64_t offset, uint64_t& out) const {
  const size_t n = static_cast<size_t>(std::min<uint64_t>(offset, kFingerprintBytes));
  char bytes[kFingerprintBytes];
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd_, bytes + got, n - got, static_cast<off_t>(offset - n + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::retriable(errno_text("cannot read", path_));
    if (r == 0) break;  // shorter than the position: seek_to says so
    got += static_cast<size_t>(r);
  }
  out = fnv1a(bytes, got);
  return Status::ok();
}

Status FileSource::seek_to(const Position& at, const char* stored_where) {
  const std::string start_over =
      std::string(": reading on would lose lines or hand out the end of one. Restore the file, or "
                  "remove ") + stored_where + " to read it from its start";
  Status st = seek(at.offset);  // refuses a position past the end
  if (!st && st.code() == EX_ERR_CONFIG)
    return Status::error(EX_ERR_CONFIG, "the stored " + st.message() + start_over, "path");
  if (!st) return st;
  if (!at.fingerprint) return Status::ok();
  uint64_t now = 0;
  st = fingerprint_at(at.offset, now);
  if (!st) return st;
  if (now != *at.fingerprint)
    return Status::error(EX_ERR_CONFIG,
                         "the stored position " + std::to_string(at.offset) + " does not belong to " +
                             path_ + ": the bytes before it are not the ones read there (the file "
                             "was replaced or rewritten)" + start_over,
                         "path");
  return Status::ok();
}

Status FileSource::open(const std::optional<sdk::Checkpoint>& resume) {
  Status locked = lock_offsets();
  if (!locked) return locked;
  if (fd_ >= 0) ::close(fd_);
  // O_NONBLOCK: a FIFO would hold the open until a writer came (and cannot be resumed at
  // a position anyway); it only matters for the open, reads of a regular file ignore it.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) return Status::error(EX_ERR_CONFIG, errno_text("cannot open", path_), "path");
  // A directory opens fine and fails only at read() (EISDIR), which was retried for ever.
  if (std::string what = not_regular(fd_); !what.empty()) {
    ::close(fd_);
    fd_ = -1;
    return Status::error(EX_ERR_CONFIG, path_ + " is " + what + ", not a file of lines", "path");
  }
  if (!buf_) {
    cap_ = kInitialBuffer;
    buf_ = std::make_unique<char[]>(cap_);
  }
  Position start;
  if (resume) {
    Status st = parse_position(*resume, start);
    if (!st) return st;
    return seek_to(start, "the stored positions (the sink's committed position, e.g. a file sink's "
                          "<path>.commit)");
  }
  if (!offsets_path_.empty()) {
    std::optional<std::string> text;
    Status st = read_whole(offsets_path_, text);
    if (!st) return st;
    if (text) {
      st = parse_position(sdk::Checkpoint{kSourceFormat, *text}, start);
      if (!st) return st;
      return seek_to(start, ("offsets.path " + offsets_path_).c_str());
    }
  }
  return seek(0);
}

Status FileSource::seek(uint64_t offset) {
  if (fd_ < 0) return Status::fatal("file source used before open");
  struct stat sb {};
  if (::fstat(fd_, &sb) != 0) return Status::fatal(errno_text("cannot stat", path_));
  if (offset > static_cast<uint64_t>(sb.st_size))
    return Status::error(EX_ERR_CONFIG,
                         "position " + std::to_string(offset) + " is past the end of " + path_ + " (" +
                             std::to_string(sb.st_size) + " bytes): the file was truncated or replaced",
                         "path");
  if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0)
    return Status::fatal(errno_text("cannot seek", path_));
  buf_offset_ = offset;
  len_ = pos_ = scanned_ = 0;
  return Status::ok();
}

// A record's offset is the byte offset of its line's last byte (its '\n', or the last
// byte of a file that ends without one): the host takes offset + 1 as the position just
// after a record, and that is where this source resumes. With the line's first byte
// instead, every stateful stage saw a gap after each line (a restarted dedupe store
// "behind" its own source).
void FileSource::emit(std::vector<ex_record>& out, size_t begin, size_t end, size_t next) {
  ex_record r{};
  r.key = sdk::null_bytes();
  r.value = ex_bytes{reinterpret_cast<const uint8_t*>(buf_.get() + begin), end - begin};
  r.partition = 0;
  r.offset = static_cast<int64_t>(buf_offset_ + next) - 1;
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
    emit(out, pos_, end, end + 1);
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
        emit(out, pos_, len_, len_);
        pos_ = len_;
      }
      at_eof = true;
      break;
    }
    // Following: a partial last line waits for its '\n'.
    if (!out.empty()) break;
    if (Status same = check_still_same_file(); !same) return same;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(kFollowInterval,
                                                      deadline - std::chrono::steady_clock::now()));
  }
  end_of_input = at_eof && out.empty();
  if (!out.empty()) host_.counter("file_source_records_total", static_cast<double>(out.size()));
  return Status::ok();
}

Status FileSource::check_still_same_file() const {
  struct stat open_sb {}, path_sb {};
  if (::fstat(fd_, &open_sb) != 0) return Status::fatal(errno_text("cannot stat", path_));
  const uint64_t read_to = buf_offset_ + len_;
  if (static_cast<uint64_t>(open_sb.st_size) < read_to)
    return Status::error(EX_ERR_CONFIG,
                         path_ + " was cut to " + std::to_string(open_sb.st_size) + " bytes while followed (" +
                             std::to_string(read_to) + " bytes were read): the source reads one file "
                             "that only grows, and lines written after the cut would be skipped. "
                             "Rotate by renaming the file and following the new one in a new "
                             "pipeline, or remove the stored positions to read it from its start",
                         "path");
  // A missing path (renamed away, not yet replaced) is not a change: the open file is
  // still the one followed.
  if (::stat(path_.c_str(), &path_sb) == 0 &&
      (path_sb.st_ino != open_sb.st_ino || path_sb.st_dev != open_sb.st_dev))
    return Status::error(EX_ERR_CONFIG,
                         "another file was put at " + path_ + " while it was followed (every line "
                         "of the one open was read): the source reads one file that only grows, "
                         "and its positions would not fit the new one. Remove the stored "
                         "positions to read the new file from its start",
                         "path");
  return Status::ok();
}

Status FileSource::checkpoint(sdk::Checkpoint& out) {
  const uint64_t at = buf_offset_ + pos_;
  uint64_t fp = 0;
  Status st = fingerprint_at(at, fp);
  if (!st) return st;
  out.format = kSourceFormat;
  out.data = position_text(at, fp);
  return Status::ok();
}

Status FileSource::commit(const sdk::Checkpoint& positions) {
  if (offsets_path_.empty()) return Status::ok();
  Position at;
  Status st = parse_position(positions, at);
  if (!st) return st;
  return sdk::replace_file_atomically(offsets_path_, positions.data, true);
}

Status FileSource::rewind(const sdk::Checkpoint& positions) {
  Position at;
  Status st = parse_position(positions, at);
  if (!st) return st;
  return seek_to(at, "the stored positions");
}

}  // namespace exactly::file
