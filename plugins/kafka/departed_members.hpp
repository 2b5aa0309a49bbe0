// A group member that dies (kill -9, lost machine) leaves its last transaction open; the
// broker aborts it only after the sink's transaction.timeout plus its own abort scan
// interval (10-20 s at defaults), and until then every read_committed reader of the
// output waits at that transaction. The kafka source sees the member leave (its group
// description); the transactional kafka sink of the same pipeline, in the same process,
// then fences the member's transactional id (txn_fencer.hpp), which aborts the open
// transaction at once. This is the in-process channel between the two components.
#pragma once

#include <functional>
#include <string>

namespace exactly::kafka::departed {

// Called with the client id of a member that left the group (the kafka source advertises
// its pipeline's transactional id as client.id).
using Listener = std::function<void(const std::string& client_id)>;

// A transactional sink with its (default-form) id, registered while alive; announcements
// for `pipeline` reach every live subscription.
class Subscription {
 public:
  Subscription(const std::string& pipeline, const std::string& txn_id, Listener fn);
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

 private:
  std::string pipeline_;
  unsigned long id_ = 0;
};

// The transactional id of `pipeline`'s oldest live subscription, or "" when it has none
// (no exactly_once kafka sink with a default id). The host creates a pipeline's sink
// before its source, so the source finds it when it builds its consumer.
std::string advertised_id(const std::string& pipeline);

// Returns how many subscribers heard it.
int announce(const std::string& pipeline, const std::string& client_id);

}  // namespace exactly::kafka::departed
