// Replacing a small file so that a crash leaves either the old or the new content, never
// a torn one: write a temp file beside it, fsync it, rename it over, fsync the directory.
// For positions, commit records and instance ids that plugins keep next to their state.
#pragma once

#include <exactly/sdk.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

namespace exactly::sdk {

// Makes a rename or creation of `path` durable: fsyncs the directory that holds it.
inline Status sync_parent_directory(const std::string& path) {
  auto slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return Status::fatal("cannot open directory " + dir + ": " + std::strerror(errno));
  int rc = ::fsync(dfd);
  int e = errno;
  ::close(dfd);
  if (rc != 0) return Status::fatal("cannot fsync directory " + dir + ": " + std::strerror(e));
  return Status::ok();
}

// `sync` false skips both fsyncs (the rename stays atomic, only durability is given up).
inline Status replace_file_atomically(const std::string& path, std::string_view content,
                                      bool sync = true) {
  auto failed = [](const std::string& what, const std::string& p) {
    return Status::fatal(what + " " + p + ": " + std::strerror(errno));
  };
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return failed("cannot create", tmp);
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status st = failed("cannot write", tmp);
      ::close(fd);
      return st;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) {
    Status st = failed("cannot fsync", tmp);
    ::close(fd);
    return st;
  }
  if (::close(fd) != 0) return failed("cannot close", tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return failed("cannot rename " + tmp + " to", path);
  return sync ? sync_parent_directory(path) : Status::ok();
}

}  // namespace exactly::sdk
