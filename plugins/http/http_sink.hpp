// The `http` sink: one HTTP request per record, many in flight, per-class rate limits
// and fuses, retries with backoff; a record that cannot be delivered goes to the
// pipeline's error policy with the status and response. at_least_once: write() returns
// only when every request of the batch has a final outcome, so a committed round never
// has a request still open, and a crash replays at most the uncommitted round (the
// idempotency key makes those repeats harmless downstream).
#pragma once

#include <exactly/sdk.hpp>

#include <cstdint>
#include <memory>
#include <optional>

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
  sdk::Status reconfigure(const sdk::Config& config) override;

 private:
  // Builds the request for record `i`; false with `reason` for a record error.
  bool build(const ex_record& r, size_t i, Request& out, std::string& reason);
  void publish(bool final_of_batch);

  sdk::Host host_;
  Settings settings_;
  RateClasses classes_;
  Dispatcher dispatcher_;
  RecordFields fields_;
  uint64_t fuse_trips_seen_ = 0;
  std::unique_ptr<Requeue> requeue_;  // with retry.topic
};

}  // namespace exactly::http
