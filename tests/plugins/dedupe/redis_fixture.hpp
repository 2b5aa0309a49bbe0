// Shared set-up for the dedupe-redis tests: the real .so, a private redis-server per
// test (tests/tools/redis-server.sh), a unique key prefix per test.
#pragma once

#include <redis_server.hpp>

#include <memory>
#include <string>
#include <vector>

#include "dedupe_fixture.hpp"

namespace dedupe_test {

using exactly::test::RedisServer;

class RedisDedupeTest : public ::testing::Test {
 protected:
  void SetUp() override { redis_ = std::make_unique<RedisServer>("dedupe"); }
  void TearDown() override { stage_.reset(); }

  // Config for `shards` (default: this test's server); `extra` replaces or adds keys.
  Pairs config(Pairs extra = {}, std::vector<std::string> shards = {}) const {
    if (shards.empty()) shards = {redis_->address()};
    Pairs c = {{"id.json", "/messageId"}, {"retention.max.age", "600000"}};
    for (auto& s : shards) c.emplace_back("shards", s);
    for (auto& kv : extra) {
      auto it = std::find_if(c.begin(), c.end(), [&](auto& x) { return x.first == kv.first; });
      if (it != c.end() && kv.first != "shards" && kv.first != "shards.previous") *it = kv;
      else c.push_back(kv);
    }
    return c;
  }

  TransformHarness& start(Pairs cfg, std::vector<Partition> parts = {part(0, "events-0")},
                          FakeHost* host = nullptr) {
    stage_.reset();
    stage_ = std::make_unique<TransformHarness>(library(), "dedupe-redis", cfg,
                                                host ? host : &host_);
    EXPECT_TRUE(stage_->ok()) << stage_->create_status().message();
    if (!stage_->ok()) throw std::runtime_error("dedupe-redis not created");
    if (!parts.empty()) {
      auto st = stage_->assign(parts);
      EXPECT_TRUE(st.is_ok()) << st.message();
    }
    return *stage_;
  }
  TransformHarness& start() { return start(config()); }

  double metric(const std::string& name, const std::string& partition = "events-0") const {
    return host_.metric(name + "{partition=" + partition + "}");
  }

  std::unique_ptr<RedisServer> redis_;
  FakeHost host_;
  std::unique_ptr<TransformHarness> stage_;
};

// Lengths of every hash field and value on a server (the compact encoding, measured;
// the store's one string key, its layout mark, is not a claim).
inline std::string field_and_value_lengths(const RedisServer& r) {
  return r.cli(
      "eval \"local t = {} for _, k in ipairs(redis.call('KEYS', '*')) do "
      "if redis.call('TYPE', k).ok == 'hash' then "
      "for i, v in ipairs(redis.call('HGETALL', k)) do t[#t + 1] = string.len(v) end end end "
      "return table.concat(t, ',')\" 0");
}

}  // namespace dedupe_test
