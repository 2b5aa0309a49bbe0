// Helpers shared by the file plugin tests: a private temp dir and whole-file I/O.
#pragma once

#include <exactly/testing/harness.hpp>

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

inline std::vector<std::string> values(const std::vector<exactly::testing::OwnedRecord>& recs) {
  std::vector<std::string> v;
  for (auto& r : recs) v.push_back(r.value);
  return v;
}

}  // namespace file_test
