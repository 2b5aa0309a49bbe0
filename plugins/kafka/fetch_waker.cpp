#include "fetch_waker.hpp"

#include <pthread.h>

#include <cstdlib>
#include <memory>

namespace exactly::kafka {

namespace {

int64_t conf_int(rd_kafka_t* rk, const char* name, int64_t fallback) {
  char buf[64];
  size_t size = sizeof buf;
  if (rd_kafka_conf_get(rd_kafka_conf(rk), name, buf, &size) != RD_KAFKA_CONF_OK) return fallback;
  char* end = nullptr;
  long long v = std::strtoll(buf, &end, 10);
  return end != buf && v > 0 ? v : fallback;
}

// "Near" the bound: librdkafka compares before each fetch, and a fetch brings up to
// max.partition.fetch.bytes per partition on top, so the queue sits at or over its bound
// while fetching is stopped; 90% leaves room for the estimate's error.
constexpr double kNear = 0.9;
// The end-offset request only has to reach the leaders: its answer is not used.
constexpr int kRequestTimeoutMs = 500;

}  // namespace

FetchWaker::FetchWaker(rd_kafka_t* rk)
    : rk_(rk),
      max_bytes_(conf_int(rk, "queued.max.messages.kbytes", 65536) * 1024),
      max_messages_(conf_int(rk, "queued.min.messages", 100000)),
      thread_([this] { run(); }) {}

FetchWaker::~FetchWaker() { stop(); }

void FetchWaker::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FetchWaker::observe(size_t queued, uint64_t handed_bytes, size_t handed, int64_t now_ms) {
  if (handed == 0) {
    armed_ = false;
    return;
  }
  const double per_record = static_cast<double>(handed_bytes) / static_cast<double>(handed);
  avg_value_ = avg_value_ == 0 ? per_record : 0.8 * avg_value_ + 0.2 * per_record;
  auto near = [this](double records) {
    return records >= kNear * static_cast<double>(max_messages_) ||
           records * avg_value_ >= kNear * static_cast<double>(max_bytes_);
  };
  // The queue as this poll found it: at its bound, librdkafka may have stopped fetching.
  if (near(static_cast<double>(queued + handed))) armed_ = true;
  if (!armed_ || near(static_cast<double>(queued)) || now_ms - last_wake_ms_ < kMinGapMs) return;
  last_wake_ms_ = now_ms;
  {
    std::lock_guard<std::mutex> g(mu_);
    requested_ = true;
  }
  cv_.notify_one();
}

void FetchWaker::run() {
  pthread_setname_np(pthread_self(), "kafka-wake");
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [this] { return requested_ || stopping_; });
    if (stopping_) return;
    requested_ = false;
    lk.unlock();
    wake_leaders();
    lk.lock();
  }
}

void FetchWaker::wake_leaders() {
  rd_kafka_topic_partition_list_t* assigned = nullptr;
  if (rd_kafka_assignment(rk_, &assigned) != RD_KAFKA_RESP_ERR_NO_ERROR || assigned == nullptr)
    return;
  // Only librdkafka here (no SDK): the raw-copy benchmark builds this file too.
  std::unique_ptr<rd_kafka_topic_partition_list_t, void (*)(rd_kafka_topic_partition_list_t*)> list(
      assigned, rd_kafka_topic_partition_list_destroy);
  if (list->cnt == 0) return;
  // ListOffsets for "latest" (timestamp -1) of every assigned partition: librdkafka sends
  // one request to each partition's leader, through the broker thread that fetches it.
  for (int i = 0; i < list->cnt; ++i) list->elems[i].offset = RD_KAFKA_OFFSET_END;
  rd_kafka_offsets_for_times(rk_, list.get(), kRequestTimeoutMs);
  wakeups_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace exactly::kafka
