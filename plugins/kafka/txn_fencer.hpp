// Fences transactional ids of group members that left without closing: a producer that
// initialises a transactional id bumps its epoch, and the coordinator aborts the
// transaction the previous holder left open before it answers. Done on a thread of its
// own (one short-lived producer per id, bounded by a timeout), never on the round's path.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace exactly::kafka {

class TxnFencer {
 public:
  // `settings`: librdkafka properties for the producer (bootstrap and the user's
  // pass-through, e.g. security); `own_id` is never fenced.
  TxnFencer(std::map<std::string, std::string> settings, std::string own_id, int64_t timeout_ms);
  ~TxnFencer();
  TxnFencer(const TxnFencer&) = delete;
  TxnFencer& operator=(const TxnFencer&) = delete;

  // Queues `txn_id` (ignored when it is ours or already queued).
  void fence(const std::string& txn_id);
  // Outcome lines since the last call, for the owner to log from its own thread.
  std::vector<std::string> take_reports();

 private:
  void run();
  std::string fence_one(const std::string& txn_id);

  const std::map<std::string, std::string> settings_;
  const std::string own_id_;
  const int64_t timeout_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::vector<std::string> reports_;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace exactly::kafka
