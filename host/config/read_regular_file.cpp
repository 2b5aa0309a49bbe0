#include "config/read_regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace exactly::config {

namespace {
const char* not_regular(mode_t m) {
  if (S_ISDIR(m)) return "is a directory, not a file";
  if (S_ISFIFO(m)) return "is a FIFO (named pipe), not a regular file";
  if (S_ISSOCK(m)) return "is a socket, not a regular file";
  if (S_ISCHR(m) || S_ISBLK(m)) return "is a device, not a regular file";
  return "is not a regular file";
}
}  // namespace

bool read_regular_file(const std::string& path, size_t max, std::string& out, std::string& why) {
  out.clear();
  if (path.empty()) {
    why = "empty path";
    return false;
  }
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    struct stat lst {};
    if (e == ENOENT && ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
      why = "a symbolic link to a file that does not exist";
    else
      why = std::strerror(e);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    why = std::strerror(errno);
    ::close(fd);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    why = not_regular(st.st_mode);
    ::close(fd);
    return false;
  }
  // Grown as it is read (the size stat gives may change), never past max + 1.
  out.reserve(std::min<size_t>(static_cast<size_t>(st.st_size), max) + 1);
  char buf[65536];
  while (out.size() <= max) {
    const ssize_t n = ::read(fd, buf, std::min(sizeof buf, max + 1 - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = std::strerror(errno);
      ::close(fd);
      out.clear();
      return false;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

}  // namespace exactly::config
