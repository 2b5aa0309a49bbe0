// One shard layout: a list of Redis servers and the rule that sends an id to one of
// them. A batch is split by shard and claimed with one script call per shard, all
// calls sent before any reply is read (the shards work in parallel).
#pragma once

#include <exactly/sdk.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redis_connection.hpp"
#include "redis_settings.hpp"

namespace exactly::dedupe::redis {

// One record's claim, prepared once per batch and reused by every layout.
struct ClaimItem {
  std::string_view field;  // compact id
  std::string_view value;  // owner + fingerprint
  uint64_t shard_hash = 0;
  std::string slice;       // bucket slice, as the decimal text used in key names
};

// Where the bucket keys of a time live: `prefix<slot>:<slice>`, a slot being
// `bucket.span` long; the current slot's buckets expire `window` after the slot ends.
struct SlotPlan {
  std::string prefix;
  int64_t slot = 0;
  int64_t consult = 1;
  int64_t expire_at_ms = 0;
  std::string layout;  // what decides a claim's key: "bucket.span=<ms> bucket.slices=<n>"
  static SlotPlan at(const RedisSettings& s, const std::string& prefix, int64_t now_ms);
};

enum class Mode { claim, check };

class Layout {
 public:
  Layout(const std::vector<RedisEndpoint>& shards, int64_t timeout_ms, const RedisAuth& auth = {},
         std::shared_ptr<const TlsContext> tls = nullptr);

  // Claims (or, in check mode, only looks up) `items[which[k]]`. For every item whose id
  // another record owns, appends {item index, stored value} to `others`.
  sdk::Status claim(const std::vector<ClaimItem>& items, const std::vector<uint32_t>& which,
                    Mode mode, const SlotPlan& plan,
                    std::vector<std::pair<uint32_t, std::string>>& others);
  // Blocks until `replicas` replicas of every shard written since the last call hold its
  // writes, or fails (retriable) after `timeout_ms`.
  sdk::Status wait_replicas(int64_t replicas, int64_t timeout_ms);
  // durability: aof-always needs every shard to fsync before it answers.
  sdk::Status check_aof_always();
  void forget_writes();
  size_t size() const { return shards_.size(); }
  std::string describe() const;
  Connection& shard(size_t i) { return *shards_[i].conn; }

 private:
  sdk::Status claim_pipelined(const std::vector<ClaimItem>& items,
                              const std::vector<uint32_t>& which, Mode mode, const SlotPlan& plan,
                              std::vector<std::pair<uint32_t, std::string>>& others);
  sdk::Status wait_pipelined(int64_t replicas, int64_t timeout_ms);
  void drop_all();

  struct Shard {
    std::unique_ptr<Connection> conn;
    std::vector<uint32_t> items;  // scratch: this batch's items on this shard
    bool written = false;         // claims since the last wait
    uint64_t written_generation = 0;  // the connection that carried them
    bool aof_checked_generation = false;
    uint64_t aof_generation = 0;
  };
  std::vector<Shard> shards_;
  std::vector<std::string_view> argv_;
};

}  // namespace exactly::dedupe::redis
