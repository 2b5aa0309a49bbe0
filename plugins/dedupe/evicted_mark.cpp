#include "evicted_mark.hpp"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

namespace exactly::dedupe {

std::string evicted_mark_path(const std::string& dir) { return dir + "/claims-evicted"; }

EvictedMark read_evicted_mark(const std::string& dir, uint64_t& label) {
  std::ifstream in(evicted_mark_path(dir));
  if (!in) return EvictedMark::absent;
  std::string text;
  std::getline(in, text, '\0');
  if (!text.empty() && text.back() == '\n') text.pop_back();
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, label);
  if (ec != std::errc() || p != end || text.empty()) return EvictedMark::unreadable;
  return EvictedMark::read;
}

bool write_evicted_mark(const std::string& dir, uint64_t label, std::string& error) {
  const std::string path = evicted_mark_path(dir), tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    error = tmp + ": " + std::strerror(errno);
    return false;
  }
  bool ok = std::fprintf(f, "%llu\n", static_cast<unsigned long long>(label)) > 0 && std::fflush(f) == 0;
  if (!ok) error = tmp + ": " + std::strerror(errno);
  if (std::fclose(f) != 0 && ok) {
    error = tmp + ": " + std::strerror(errno);
    ok = false;
  }
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = path + ": " + std::strerror(errno);
    ok = false;
  }
  if (!ok) std::remove(tmp.c_str());
  return ok;
}

bool clear_evicted_mark(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove(evicted_mark_path(dir), ec);
  return !ec;
}

}  // namespace exactly::dedupe
