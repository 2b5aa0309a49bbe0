#include "commit_record.hpp"

#include <charconv>
#include <cstdio>

namespace exactly::file {
namespace {

constexpr std::string_view kMagicV1 = "exactly.file.commit.v1\n";
constexpr std::string_view kMagic = "exactly.file.commit.v2\n";

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// Reads "<label> <number>\n" at `at`.
bool read_number(std::string_view text, size_t& at, std::string_view label, uint64_t& out) {
  if (text.substr(at, label.size() + 1) != std::string(label) + " ") return false;
  at += label.size() + 1;
  auto [p, ec] = std::from_chars(text.data() + at, text.data() + text.size(), out);
  if (ec != std::errc() || p == text.data() + text.size() || *p != '\n') return false;
  at = static_cast<size_t>(p - text.data()) + 1;
  return true;
}

// Reads "<label> <len>\n<len bytes>\n" at `at`: positions may be binary.
bool read_blob(std::string_view text, size_t& at, std::string_view label, std::string& out) {
  uint64_t n = 0;
  // Compared as what is left, so that a length near 2^64 cannot wrap the sum around.
  if (!read_number(text, at, label, n) || n >= text.size() - at || text[at + n] != '\n')
    return false;
  out.assign(text.substr(at, n));
  at += n + 1;
  return true;
}

}  // namespace

std::string CommitRecord::encode() const {
  std::string s(kMagic);
  s += "length " + std::to_string(length) + "\n";
  s += "positions " + std::string(positions ? "1" : "0") + "\n";
  if (positions) {
    s += "format " + std::to_string(positions->format.size()) + "\n" + positions->format + "\n";
    s += "data " + std::to_string(positions->data.size()) + "\n" + positions->data + "\n";
  }
  s += "file " + std::string(file ? "1" : "0") + "\n";
  if (file) s += "device " + std::to_string(file->device) + "\ninode " + std::to_string(file->inode) + "\n";
  char sum[32];
  std::snprintf(sum, sizeof(sum), "%016llx", static_cast<unsigned long long>(fnv1a64(s)));
  s += "fnv1a64 " + std::string(sum) + "\n";
  return s;
}

sdk::Status CommitRecord::decode(const std::string& text, const std::string& path,
                                 CommitRecord& out) {
  auto bad = [&](const std::string& why) {
    // The operator's to decide (a restart cannot change it): the pipeline stops.
    return sdk::Status::error(EX_ERR_CONFIG,
                              path + " is damaged or not a file-sink commit record (" + why +
                                  "); it decides what output is committed, so it is not guessed",
                              "path");
  };
  std::string_view t(text);
  const bool v1 = t.substr(0, kMagicV1.size()) == kMagicV1;
  if (!v1 && t.substr(0, kMagic.size()) != kMagic) return bad("unknown header");
  size_t at = kMagic.size();  // both headers are as long
  uint64_t has = 0;
  out = CommitRecord{};
  if (!read_number(t, at, "length", out.length) || !read_number(t, at, "positions", has) ||
      has > 1)
    return bad("bad length/positions line");
  if (has == 1) {
    sdk::Checkpoint cp;
    if (!read_blob(t, at, "format", cp.format) || !read_blob(t, at, "data", cp.data))
      return bad("bad positions");
    out.positions = std::move(cp);
  }
  if (!v1) {
    uint64_t has_file = 0;
    if (!read_number(t, at, "file", has_file) || has_file > 1) return bad("bad file line");
    if (has_file == 1) {
      FileIdentity id;
      if (!read_number(t, at, "device", id.device) || !read_number(t, at, "inode", id.inode))
        return bad("bad file identity");
      out.file = id;
    }
  }
  size_t body = at;
  char sum[32];
  std::snprintf(sum, sizeof(sum), "%016llx",
                static_cast<unsigned long long>(fnv1a64(t.substr(0, body))));
  if (t.substr(at) != "fnv1a64 " + std::string(sum) + "\n") return bad("checksum mismatch");
  return sdk::Status::ok();
}

}  // namespace exactly::file
