#include "error_text.hpp"

#include <cstdio>

namespace exactly::kafka {

std::string fit_error(const std::string& head, const std::string& tail, std::size_t max) {
  if (max == 0) return {};
  const std::size_t room = max - 1;  // the NUL
  if (head.size() + tail.size() <= room) return head + tail;
  static const std::string kCut = "...";
  if (tail.size() + kCut.size() >= room) return tail.substr(0, room);
  return head.substr(0, room - tail.size() - kCut.size()) + kCut + tail;
}

std::string with_reason(const std::string& what, const std::string& reason) {
  if (reason.empty() || what.find(reason) != std::string::npos) return what;
  return what + " (" + reason + ")";
}

std::string fenced_hint(const std::string& txn_id, const std::string& identity_file, double process_age_s) {
  std::string hint = ". Another producer with transactional.id " + txn_id + " has taken over";
  if (identity_file.empty())
    return hint + " (the transactional.id set for this sink is in use elsewhere?)";
  const std::string copy =
      "another live host uses a copy of this state.dir: each host needs its own; on the host "
      "with the copy, stop exactly and delete the id file, here " + identity_file +
      ", so that it takes a new id";
  // The group's members see a departed one after its session timeout (6 s, the source's
  // default; librdkafka's own is 45 s) and a description (at most 30 s later): past that, a
  // restart explains nothing.
  constexpr double kRecentStartS = 180;
  if (process_age_s < 0 || process_age_s > kRecentStartS) return hint + " (if this repeats, " + copy + ")";
  return hint + ". This host started " + std::to_string(static_cast<long>(process_age_s)) +
         " s ago: the group fences the id of a host that left, and this host's previous "
         "run had it; the pipeline is rebuilt and takes it back, nothing lost or doubled. "
         "If this repeats, " + copy;
}

std::string fenced_instance_hint(const std::string& instance_id) {
  return ". The group fenced this member's group.instance.id" +
         (instance_id.empty() ? std::string() : " " + instance_id) +
         ": after the broker that coordinated the group failed, a static member's request "
         "from before its rejoin is answered this way (once per member, nothing lost or "
         "doubled: the pipeline is rebuilt and joins again with the same id); if it repeats "
         "without a broker failure, another live host uses the same group.instance.id (a copy "
         "of this source's state.dir, or the same id set by hand): each host needs its own";
}

std::string timed_out_transaction_hint(int64_t open_ms, int64_t timeout_ms) {
  auto secs = [](int64_t ms) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f s", static_cast<double>(ms) / 1000.0);
    return std::string(buf);
  };
  return ". The transaction had been open for " + secs(open_ms) + ", longer than transaction.timeout (" +
         secs(timeout_ms) + "): the transaction coordinator aborted it and fenced this producer "
         "(a broker outage, a stalled round, or this host paused: a stopped process, a frozen "
         "VM). The pipeline is rebuilt and the round "
         "replayed, nothing lost or doubled; if it recurs without an outage, raise transaction.timeout";
}

}  // namespace exactly::kafka
