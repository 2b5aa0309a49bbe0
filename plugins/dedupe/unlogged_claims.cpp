#include "unlogged_claims.hpp"

#include <exactly/durable_file.hpp>

#include <filesystem>
#include <fstream>

namespace exactly::dedupe {

namespace {
constexpr const char* kFile = "UNLOGGED_SINCE";
std::string path_in(const std::string& dir) { return (std::filesystem::path(dir) / kFile).string(); }
}  // namespace

sdk::Status mark_unlogged(const std::string& store_dir, uint64_t next_seq) {
  std::error_code ec;
  if (std::filesystem::exists(path_in(store_dir), ec)) return sdk::Status::ok();
  return sdk::replace_file_atomically(path_in(store_dir), std::to_string(next_seq) + "\n");
}

std::optional<uint64_t> unlogged_since(const std::string& store_dir) {
  std::ifstream in(path_in(store_dir));
  if (!in) return std::nullopt;
  unsigned long long seq = 0;
  if (!(in >> seq)) return 0;
  return static_cast<uint64_t>(seq);
}

void clear_unlogged(const std::string& store_dir) {
  std::error_code ec;
  std::filesystem::remove(path_in(store_dir), ec);
}

}  // namespace exactly::dedupe
