// The `filter` transform: keeps or drops records by a predicate on one JSON field.
// Stateless; reconfigure swaps the rules between batches.
#pragma once

#include <exactly/sdk.hpp>

#include <memory>
#include <mutex>

#include "predicate.hpp"

namespace exactly::filter {

class FilterTransform final : public sdk::Transform {
 public:
  FilterTransform(sdk::Host host, const sdk::Config& config);
  // The create-time checks (Rules::from) without creating anything (ABI 1.3).
  static sdk::Status validate(const sdk::Config& config);

  sdk::Status process(const sdk::Batch& in, const sdk::Emitter& out) override;
  sdk::Status reconfigure(const sdk::Config& config) override;

 private:
  sdk::Host host_;
  std::mutex mu_;  // guards rules_ against a reconfigure from another thread
  std::shared_ptr<const Rules> rules_;
  Matcher matcher_;
};

}  // namespace exactly::filter
