#include "empty_wals.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <system_error>

namespace exactly::dedupe {

namespace {
// RocksDB's own: digits then ".log" (the info log is "LOG", "LOG.old.<time>").
bool wal_number(const std::string& name, uint64_t& number) {
  constexpr std::string_view kExt = ".log";
  if (name.size() <= kExt.size() || name.size() > kExt.size() + 19 ||
      name.compare(name.size() - kExt.size(), kExt.size(), kExt) != 0)
    return false;
  const auto digits = name.end() - static_cast<long>(kExt.size());
  if (!std::all_of(name.begin(), digits, [](unsigned char c) { return std::isdigit(c) != 0; }))
    return false;
  number = std::stoull(std::string(name.begin(), digits));
  return true;
}
}  // namespace

std::size_t remove_empty_wals(const std::string& dir, uint64_t current) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::size_t removed = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code fec;
    uint64_t number = 0;
    if (!it->is_regular_file(fec) || !wal_number(it->path().filename().string(), number) ||
        number >= current)
      continue;
    if (it->file_size(fec) != 0 || fec) continue;
    // Failing to remove one only leaves it where RocksDB would have.
    if (fs::remove(it->path(), fec)) ++removed;
  }
  return removed;
}

}  // namespace exactly::dedupe
