#include "txn_fencer.hpp"

#include "rdkafka_common.hpp"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>

namespace exactly::kafka {
namespace {

// This producer's own chatter (e.g. connection refused while the broker restarts) is
// summed up by the outcome line instead.
void quiet_log(const rd_kafka_t*, int, const char*, const char*) {}

}  // namespace

TxnFencer::TxnFencer(std::map<std::string, std::string> settings, std::string own_id,
                     int64_t timeout_ms)
    : settings_(std::move(settings)), own_id_(std::move(own_id)), timeout_ms_(timeout_ms) {
  worker_ = std::thread([this] { run(); });
}

TxnFencer::~TxnFencer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  worker_.join();
}

void TxnFencer::fence(const std::string& txn_id) {
  if (txn_id == own_id_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || std::find(queue_.begin(), queue_.end(), txn_id) != queue_.end()) return;
    queue_.push_back(txn_id);
  }
  cv_.notify_all();
}

std::vector<std::string> TxnFencer::take_reports() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(reports_, {});
}

void TxnFencer::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    std::string id = queue_.front();
    lock.unlock();
    std::string report = fence_one(id);
    lock.lock();
    queue_.pop_front();
    reports_.push_back(std::move(report));
  }
}

std::string TxnFencer::fence_one(const std::string& txn_id) {
  const auto t0 = std::chrono::steady_clock::now();
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [k, v] : settings_)
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return "not fenced " + txn_id + ": " + k + ": " + err;
    }
  rd_kafka_conf_set_log_cb(conf, &quiet_log);
  if (rd_kafka_conf_set(conf, "transactional.id", txn_id.c_str(), err, sizeof(err)) !=
      RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    return "not fenced " + txn_id + ": " + err;
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return "not fenced " + txn_id + ": " + err;
  }
  std::string outcome;
  const int64_t deadline = now_ms() + timeout_ms_;
  for (;;) {
    // In slices, so that a closing owner does not wait for the whole timeout; a timed-out
    // call is resumed by the next one.
    ErrorPtr e(rd_kafka_init_transactions(
        rk, static_cast<int>(std::clamp<int64_t>(deadline - now_ms(), 1, 2000))));
    if (!e) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
      outcome = "fenced " + txn_id + " in " + std::to_string(ms) +
                " ms: any transaction it left open is aborted";
      break;
    }
    bool again = rd_kafka_error_is_retriable(e.get()) && now_ms() < deadline;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) again = false;
    }
    if (!again) {
      outcome = "not fenced " + txn_id + ": " + describe(e.get()) +
                " (its open transaction ends at its transaction.timeout)";
      break;
    }
  }
  rd_kafka_destroy(rk);
  return outcome;
}

}  // namespace exactly::kafka
