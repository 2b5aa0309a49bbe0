#include "fs_util.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace exactly::file {

using sdk::Status;

std::string errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

std::string dir_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Status write_all(int fd, const char* data, size_t len, const std::string& path) {
  while (len > 0) {
    ssize_t n = ::write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::abortable(errno_text("cannot write", path));
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
  return Status::ok();
}

Status read_whole(const std::string& path, std::optional<std::string>& out) {
  out.reset();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::ok();
    return Status::fatal(errno_text("cannot open", path));
  }
  std::string content;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      Status st = Status::fatal(errno_text("cannot read", path));
      ::close(fd);
      return st;
    }
    if (n == 0) break;
    content.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  out = std::move(content);
  return Status::ok();
}

std::string not_regular(int fd) {
  struct stat sb {};
  if (::fstat(fd, &sb) != 0 || S_ISREG(sb.st_mode)) return "";
  if (S_ISDIR(sb.st_mode)) return "a directory";
  if (S_ISFIFO(sb.st_mode)) return "a FIFO";
  if (S_ISCHR(sb.st_mode)) return "a character device";
  if (S_ISBLK(sb.st_mode)) return "a block device";
  if (S_ISSOCK(sb.st_mode)) return "a socket";
  return "not a file";
}

Status open_exclusive(const std::string& path, const std::string& key, const std::string& in_use,
                      int& out) {
  // O_NONBLOCK: a FIFO would otherwise hold the open until a reader came.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return Status::error(EX_ERR_CONFIG, errno_text("cannot open", path), key);
  // A device or FIFO opens, then fails at truncate or rename, which was retried for ever
  // (and put a "<path>.commit" beside /dev/null).
  if (std::string what = not_regular(fd); !what.empty()) {
    ::close(fd);
    return Status::error(EX_ERR_CONFIG, path + " is " + what + ", not a regular file", key);
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    ::close(fd);
    if (e == EWOULDBLOCK) return Status::error(EX_ERR_CONFIG, in_use, key);
    return Status::fatal("cannot lock " + path + ": " + std::strerror(e));
  }
  out = fd;
  return Status::ok();
}

}  // namespace exactly::file
