// The `generator` source: synthetic JSON events with a controlled share of duplicates,
// spread over N partitions, reproducible from (seed, partition, offset).
#pragma once

#include <exactly/sdk.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rate_limiter.hpp"
#include "record_maker.hpp"

namespace exactly::generator {

inline constexpr const char* kCheckpointFormat = "generator.v1";

struct Settings {
  int64_t count = 1000000;  // 0 = unbounded
  int64_t rate = 0;         // records/s, 0 = as fast as possible
  int64_t batch_size = 1024;
  bool key_is_id = true;
  RecordParams record;

  static Settings from(const sdk::Config& c);
};

class GeneratorSource final : public sdk::Source {
 public:
  GeneratorSource(sdk::Host host, const sdk::Config& config);
  // The create-time checks (Settings::from) without creating anything (ABI 1.3).
  static sdk::Status validate(const sdk::Config& config);

  sdk::Status open(const std::optional<sdk::Checkpoint>& resume) override;
  sdk::Status poll(int timeout_ms, std::vector<ex_record>& out, bool& end_of_input) override;
  sdk::Status checkpoint(sdk::Checkpoint& out) override;
  // ABI 1.4: positions with some partitions further back (a sink's completion window).
  sdk::Status checkpoint_at(const std::vector<sdk::Partition>& parts, sdk::Checkpoint& out);
  sdk::Status commit(const sdk::Checkpoint&) override { return sdk::Status::ok(); }
  sdk::Status rewind(const sdk::Checkpoint& positions) override;
  sdk::Status reconfigure(const sdk::Config& config) override;

 private:
  sdk::Status load_positions(const sdk::Checkpoint& cp);
  // Records in partition p (UINT64_MAX when unbounded).
  uint64_t partition_size(uint32_t p) const;
  // Smallest global index still to emit, or UINT64_MAX when every partition is done.
  uint64_t lowest_pending() const;
  sdk::Status announce();

  sdk::Host host_;
  Settings s_;
  RecordMaker maker_;
  RateLimiter limiter_;
  std::vector<uint64_t> next_;  // next offset per partition
  static sdk::Status encode(const std::vector<uint64_t>& next, sdk::Checkpoint& out);
  std::string arena_;           // bytes of the current batch; never reallocated mid-poll
  bool announced_ = false;
};

}  // namespace exactly::generator
