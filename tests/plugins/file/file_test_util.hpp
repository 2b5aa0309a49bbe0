// Helpers shared by the file plugin tests: a private temp dir and whole-file I/O.
#pragma once

#include <exactly/testing/harness.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace file_test {

inline const exactly::testing::Library& lib() {
  static exactly::testing::Library l(std::string(EXACTLY_PLUGIN_DIR) + "/exactly_file.so");
  return l;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "exactly-file-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void spit(const std::string& path, const std::string& content, bool append = false) {
  std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  out << content;
}

// Records with these values, on partition 0 at offsets 0, 1, ...
inline std::vector<exactly::testing::OwnedRecord> recs(std::initializer_list<const char*> vs) {
  std::vector<exactly::testing::OwnedRecord> out;
  int64_t off = 0;
  for (auto* v : vs) out.push_back(exactly::testing::rec(std::nullopt, v, 0, off++));
  return out;
}

// A file-sink commit record written by hand: `body` (header and fields) with the checksum
// line the sink expects after it (FNV-1a 64 of the body).
inline std::string with_checksum(const std::string& body) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : body) h = (h ^ c) * 0x100000001b3ull;
  char sum[32];
  std::snprintf(sum, sizeof(sum), "%016llx", static_cast<unsigned long long>(h));
  return body + "fnv1a64 " + sum + "\n";
}

inline std::vector<std::string> values(const std::vector<exactly::testing::OwnedRecord>& recs) {
  std::vector<std::string> v;
  for (auto& r : recs) v.push_back(r.value);
  return v;
}

}  // namespace file_test
