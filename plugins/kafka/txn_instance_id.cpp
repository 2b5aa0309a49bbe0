#include "txn_instance_id.hpp"

#include <exactly/durable_file.hpp>

#include <exactly/sdk.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace exactly::kafka {
namespace {

std::string safe(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  return out.empty() ? std::string("_") : out;
}

bool valid_id(const std::string& s) {
  if (s.size() != 16) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string fresh_id() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string txn_instance_id(const std::string& state_dir, const std::string& pipeline) {
  std::filesystem::path dir = std::filesystem::path(state_dir) / "kafka-sink";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw sdk::ConfigError("state.dir", "cannot create " + dir.string() + ": " + ec.message());
  auto path = dir / (safe(pipeline) + ".instance-id");
  {
    std::ifstream in(path);
    std::string id;
    if (in >> id && valid_id(id)) return id;
  }
  // Durable before it is used: an id that vanished on power loss would let a restarted
  // host start with a new id and leave the old one's transaction hanging.
  std::string id = fresh_id();
  sdk::Status st = sdk::replace_file_atomically(path.string(), id + "\n");
  if (!st) throw sdk::ConfigError("state.dir", st.message());
  return id;
}

std::string default_transactional_id(const std::string& pipeline, const std::string& instance) {
  return "exactly-" + safe(pipeline) + "-" + instance;
}

}  // namespace exactly::kafka
