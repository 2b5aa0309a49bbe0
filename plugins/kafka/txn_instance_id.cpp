#include "txn_instance_id.hpp"

#include <exactly/durable_file.hpp>

#include <exactly/sdk.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
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

// One host per identity: a second process with the same state dir would use the same
// transactional.id and group.instance.id, and the two would fence each other in a loop
// with nothing but librdkafka's "fenced" to tell why. A POSIX record lock belongs to
// the process, not to a descriptor: the host's own sink and source (and a sink rebuilt
// by a reload, even from a reloaded copy of this library) take it again freely, and it
// goes when the process exits, however it exits. The descriptor is kept open, once per
// file, for the life of the process (closing any descriptor of the file would drop the
// lock; opening one per sink would leak one per restart).
void hold_identity(const std::filesystem::path& id_path, const std::string& pipeline) {
  const std::string lock_path = id_path.string() + ".lock";
  static std::mutex mu;
  static auto* held = new std::set<std::string>;  // never destroyed: see above
  std::lock_guard<std::mutex> g(mu);
  if (held->count(lock_path)) return;
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw sdk::ConfigError("state.dir", "cannot open " + lock_path + ": " + std::strerror(errno));
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_SETLK, &fl) == 0) {
    held->insert(lock_path);
    return;
  }
  const int e = errno;
  struct flock who {};
  who.l_type = F_WRLCK;
  who.l_whence = SEEK_SET;
  const bool known = ::fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK;
  ::close(fd);
  if (e != EACCES && e != EAGAIN)
    throw sdk::ConfigError("state.dir", "cannot lock " + lock_path + ": " + std::strerror(e));
  throw sdk::ConfigError(
      "state.dir",
      "pipeline '" + pipeline + "' already runs from " + id_path.parent_path().parent_path().string() +
          " in another process" + (known ? " (pid " + std::to_string(who.l_pid) + ")" : std::string()) +
          ": each host needs a state.dir of its own (two hosts with one state.dir share one "
          "transactional.id and fence each other's transactions)");
}

}  // namespace

std::string instance_id_path(const std::string& state_dir, const std::string& pipeline) {
  return (std::filesystem::path(state_dir) / "kafka-sink" / (safe(pipeline) + ".instance-id")).string();
}

std::string txn_instance_id(const std::string& state_dir, const std::string& pipeline) {
  std::filesystem::path dir = std::filesystem::path(state_dir) / "kafka-sink";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw sdk::ConfigError("state.dir", "cannot create " + dir.string() + ": " + ec.message());
  auto path = dir / (safe(pipeline) + ".instance-id");
  hold_identity(path, pipeline);
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
