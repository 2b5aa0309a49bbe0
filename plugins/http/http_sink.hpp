// The `http` sink: one HTTP request per record, many in flight, per-class rate limits
// and fuses, retries with backoff; a record that cannot be delivered goes to the
// pipeline's error policy with the status and response, or with retry.topic is
// re-enqueued there for later (requeue.hpp; in completed(), before the round's
// prepare_commit flushes the producer). at_least_once with an ordered
// completion window (ABI 1.4): write() hands requests over and returns unless the window
// is full; before each commit the host learns, per partition, the lowest record still
// open, and commits only up to it, so a crash replays only unfinished work (the
// idempotency key makes those repeats harmless downstream). The requests move on in a
// thread of the sink's own (the only one that calls libcurl), so they progress between
// the pipeline's calls too.
#pragma once

#include <exactly/sdk.hpp>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <memory>
#include <optional>
#include <thread>

#include "completion_window.hpp"
#include "dispatcher.hpp"
#include "field_ref.hpp"
#include "http_settings.hpp"
#include "rate_classes.hpp"
#include "requeue.hpp"

namespace exactly::http {

class HttpSink final : public sdk::Sink {
 public:
  HttpSink(sdk::Host host, const sdk::Config& config);
  // The create-time checks (Settings::from, delivery) without starting curl (ABI 1.3).
  static sdk::Status validate(const sdk::Config& config);
  ~HttpSink() override;

  sdk::Status open(std::optional<sdk::Checkpoint>& stored) override;
  sdk::Status write(const sdk::Batch& in, const sdk::RecordErrors& errors) override;
  sdk::Status prepare_commit() override;
  sdk::Status commit(const sdk::Checkpoint* positions, bool& stored_positions) override;
  // ABI 1.4: lowers each partition to its lowest open record, reports late failures.
  sdk::Status completed(std::vector<sdk::Partition>& parts, const sdk::RecordErrors& errors);
  sdk::Status revoke(const std::vector<sdk::Partition>& parts) override;
  sdk::Status abort() override;
  sdk::Status reconfigure(const sdk::Config& config) override;

 private:
  // Builds the request for record `i`; false with `reason` for a record error.
  bool build(const ex_record& r, size_t i, Request& out, std::string& reason);
  void publish();
  bool window_full() const;
  // The class of a request by its class value (indexes move on reconfigure).
  size_t class_of(const Request& r);
  // The transfer thread: pumps the dispatcher, waits for activity without the lock.
  void run_transfers();
  // Has the transfer thread drop the requests `which` selects; `lk` holds mu_.
  void drop(std::unique_lock<std::mutex>& lk, std::function<bool(const Request&)> which);
  sdk::Status transfer_failure() const;

  sdk::Host host_;
  Settings settings_;
  RateClasses classes_;
  CompletionWindow window_;  // before dispatcher_: transfers point into it until it goes
  Dispatcher dispatcher_;
  Dispatcher::Done on_done_;
  RecordFields fields_;
  uint64_t waits_ = 0;  // write()'s waits for room, to publish every fifth
  // With retry.topic. Used on the pipeline thread only (open, completed, prepare_commit):
  // librdkafka never runs on the transfer thread.
  std::unique_ptr<Requeue> requeue_;
  // Everything above but requeue_ is shared with the transfer thread under mu_; it calls libcurl
  // (dispatcher_.pump/drop) only there, and waits for activity without holding mu_.
  std::mutex mu_;
  std::condition_variable progress_;  // a request became final, or a drop was done
  std::function<bool(const Request&)> drop_;
  std::string transfer_error_;
  bool stop_ = false;
  std::thread transfers_;  // last: started when everything else exists
};

}  // namespace exactly::http
