#include "damage_mark.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>
#include <filesystem>

namespace exactly::dedupe {

std::string damage_mark_path(const std::string& dir) { return dir + "/DAMAGED"; }

bool read_damage_mark(const std::string& dir, std::string& why) {
  std::ifstream in(damage_mark_path(dir));
  if (!in) return false;
  why.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (why.size() > 1024) why.resize(1024);  // a mark written by hand: said, not echoed whole
  if (why.empty()) why = "marked by " + damage_mark_path(dir);
  return true;
}

bool write_damage_mark(const std::string& dir, const std::string& why, std::string& error) {
  // Not fsynced: a mark lost to a power cut costs the next run the same failed read,
  // which marks the store again.
  const std::string path = damage_mark_path(dir);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    error = std::strerror(errno);
    return false;
  }
  bool ok = std::fputs(why.c_str(), f) >= 0 && std::fflush(f) == 0;
  if (!ok) error = std::strerror(errno);
  if (std::fclose(f) != 0 && ok) {
    error = std::strerror(errno);
    ok = false;
  }
  return ok;
}

bool clear_damage_mark(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove(damage_mark_path(dir), ec);
  return !ec;
}

}  // namespace exactly::dedupe
