// Wakes librdkafka's fetchers when a full prefetch queue has room again.
//
// librdkafka 2.0.2 stops fetching a partition once the queue its records wait in holds
// queued.max.messages.kbytes (or queued.min.messages), and decides again only when its
// broker thread wakes up for another reason: a request or answer on that connection, an
// op, or the thread's 1 s idle timeout. Nothing wakes it when the application drains the
// queue, so a consumer reading a backlog fills the queue, drains it, then waits with
// nothing to do for up to a second (librdkafka 2.1.0 reworked this with
// fetch.queue.backoff.ms). A 2M-record catch-up spent 0.3-0.5 s of every 1.2 s that way,
// every thread of the host and the broker idle (docs/benchmarks.md, "The prefetch
// queue's idle second").
//
// The source tells this after each poll how long the queue is; once the queue has been
// near its bound (as a poll found it: so librdkafka may have stopped fetching) and is
// below it again, a thread of its own asks the partitions' leaders for their end offsets
// (ListOffsets, one request per leader): the request wakes each leader's broker thread,
// which then finds the queue under its bound and fetches. At most one wake-up per
// kMinGapMs, and none while the source keeps up (the queue never comes near its bound).
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace exactly::kafka {

class FetchWaker {
 public:
  // `rk`: the consumer (kept, not owned); its queued.* bounds are read from its config.
  explicit FetchWaker(rd_kafka_t* rk);
  ~FetchWaker();
  FetchWaker(const FetchWaker&) = delete;
  FetchWaker& operator=(const FetchWaker&) = delete;

  // After a poll: the records waiting in the queue the source drains, the value bytes of
  // the records the poll handed out and their number (librdkafka bounds the queue by the
  // sum of its values' lengths; the queue's own byte count is not public).
  void observe(size_t queued, uint64_t handed_bytes, size_t handed, int64_t now_ms);
  // The thread is stopped and joined (before the consumer closes).
  void stop();

  uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }

  static constexpr int64_t kMinGapMs = 10;

 private:
  void run();
  void wake_leaders();

  rd_kafka_t* rk_;
  int64_t max_bytes_ = 0;
  int64_t max_messages_ = 0;
  double avg_value_ = 0;  // bytes per record, a moving average over what polls handed out
  // The queue came near its bound (librdkafka may have stopped fetching); cleared by a
  // poll that handed out nothing (caught up: no stop to undo).
  bool armed_ = false;
  int64_t last_wake_ms_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  bool requested_ = false;
  bool stopping_ = false;
  std::atomic<uint64_t> wakeups_{0};
  std::thread thread_;
};

}  // namespace exactly::kafka
