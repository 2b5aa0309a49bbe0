#include "evicted_mark.hpp"

#include <exactly/durable_file.hpp>

#include <charconv>
#include <filesystem>
#include <fstream>
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
  // Not synced (evicted_mark.hpp): the rename alone keeps it whole through a kill.
  sdk::Status st = sdk::replace_file_atomically(evicted_mark_path(dir), std::to_string(label) + "\n", false);
  if (!st) error = st.message();
  return static_cast<bool>(st);
}

bool clear_evicted_mark(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove(evicted_mark_path(dir), ec);
  return !ec;
}

}  // namespace exactly::dedupe
