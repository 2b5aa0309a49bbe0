#include "client_files.hpp"

#include <exactly/sdk.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace exactly::kafka {

namespace {

struct FileSetting {
  const char* key;
  bool directory_ok;
};

// Comma-separated lists (ssl.ca.location holds one path) are not a librdkafka form for
// these keys: each is one path.
constexpr FileSetting kFiles[] = {
    {"ssl.ca.location", true},       {"ssl.certificate.location", false},
    {"ssl.key.location", false},     {"ssl.keystore.location", false},
    {"ssl.crl.location", false},     {"sasl.kerberos.keytab", false},
};

void check_one(const std::string& key, const std::string& path, bool directory_ok) {
  auto fail = [&](const std::string& why) {
    throw sdk::ConfigError("rdkafka." + key, path + ": " + why);
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) {
    if (!directory_ok) fail("is a directory, not a file");
    if (::access(path.c_str(), R_OK | X_OK) != 0) fail(std::strerror(errno));
    return;
  }
  if (!S_ISREG(st.st_mode)) fail(std::string("is not a regular file") + (directory_ok ? " or directory" : ""));
  // Opened without blocking, as a check that this process may read it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(std::strerror(errno));
  ::close(fd);
}

}  // namespace

void check_client_files(const std::map<std::string, std::string>& user) {
  for (const auto& f : kFiles) {
    auto it = user.find(f.key);
    if (it == user.end() || it->second.empty()) continue;
    if (std::string(f.key) == "ssl.ca.location" && it->second == "probe") continue;
    check_one(f.key, it->second, f.directory_ok);
  }
}

}  // namespace exactly::kafka
