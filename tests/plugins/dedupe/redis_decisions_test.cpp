// dedupe-redis against a real redis-server: the same decisions as the RocksDB store
// (new / duplicate / replay by the same origin / conflict), repeats inside a batch,
// id errors, the compact encoding, and a stage on another host seeing the claims.
#include "redis_fixture.hpp"

namespace dedupe_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::HasSubstr;

TEST_F(RedisDedupeTest, NewIdsAreEmittedAndRepeatsDropped) {
  auto& t = start();
  EXPECT_THAT(t.process({event("a", 0), event("b", 1), event("c", 2)}).kept, ElementsAre(0u, 1u, 2u));
  auto out = t.process({event("b", 3), event("d", 4), event("a", 5)});
  EXPECT_THAT(out.kept, ElementsAre(1u));
  EXPECT_THAT(out.rejected, IsEmpty());
  EXPECT_EQ(metric("dedupe_duplicates_total"), 2);
  EXPECT_EQ(metric("dedupe_kept_total"), 4);
}

TEST_F(RedisDedupeTest, RepeatsInsideOneBatchAreCaught) {
  auto& t = start();
  auto out = t.process({event("a", 0), event("a", 1), event("b", 2), event("a", 3), event("b", 4)});
  EXPECT_THAT(out.kept, ElementsAre(0u, 2u));
  EXPECT_EQ(metric("dedupe_duplicates_total"), 3);
}

TEST_F(RedisDedupeTest, TheOwnerIsEmittedAgainOnReplay) {
  auto& t = start();
  EXPECT_THAT(t.process({event("a", 0), event("b", 1), event("a", 2)}).kept, ElementsAre(0u, 1u));
  // The round aborted after the claims reached Redis: the source replays from 0.
  ASSERT_TRUE(t.abort().is_ok());
  EXPECT_THAT(t.process({event("a", 0), event("b", 1), event("a", 2)}).kept, ElementsAre(0u, 1u));
  // The same offset in another partition is another origin: a duplicate.
  ASSERT_TRUE(t.assign({part(1, "events-1")}).is_ok());
  EXPECT_THAT(t.process({event("a", 0, 1)}).kept, IsEmpty());
}

TEST_F(RedisDedupeTest, DifferentContentIsAConflictPerPolicy) {
  auto& t = start(config({{"on.conflict", "reject"}}));
  t.process({event("a", 0, 0, "first")});
  auto out = t.process({event("a", 1, 0, "first"), event("a", 2, 0, "second")});
  EXPECT_THAT(out.kept, IsEmpty());
  ASSERT_EQ(out.rejected.size(), 1u);
  EXPECT_EQ(out.rejected[0].first, 1u);
  EXPECT_THAT(out.rejected[0].second, HasSubstr("claimed by offset 0"));
  EXPECT_EQ(metric("dedupe_conflicts_total"), 1);
  EXPECT_EQ(metric("dedupe_duplicates_total"), 1);

  auto& s = start(config({{"on.conflict", "stop"}, {"key.prefix", "stop:"}}));
  s.process({event("a", 0, 0, "first")});
  exactly::sdk::Status st;
  s.process({event("a", 1, 0, "second")}, &st);
  EXPECT_EQ(st.code(), EX_ERR_CONFIG);
  EXPECT_THAT(st.message(), HasSubstr("on.conflict: stop"));
}

TEST_F(RedisDedupeTest, MissingOrOverlongIdsAreRecordErrors) {
  auto& t = start(config({{"id.max.bytes", "8"}}));
  auto out = t.process({exactly::testing::rec(std::nullopt, "{\"other\":1}", 0, 0),
                        event("123456789", 1), event("ok", 2)});
  EXPECT_THAT(out.kept, ElementsAre(2u));
  ASSERT_EQ(out.rejected.size(), 2u);
  EXPECT_EQ(metric("dedupe_id_errors_total"), 2);
}

TEST_F(RedisDedupeTest, ClaimsAreCompactUuidsSixteenBytesOwnersTen) {
  std::mt19937_64 rng(7);
  auto& t = start();
  std::vector<OwnedRecord> in;
  for (int i = 0; i < 50; ++i) in.push_back(event(uuid(rng), i));
  in.push_back(event(std::string(40, 'x'), 50));  // long id: 16-byte hash + 1 tag byte
  in.push_back(event("short", 51));
  EXPECT_EQ(t.process(in).kept.size(), in.size());
  // field, value pairs: UUID 16 / value 14 (10 owner + 4 fingerprint); hashed 17; raw 5.
  std::string lengths = field_and_value_lengths(*redis_);
  std::map<std::string, int> seen;
  std::stringstream ss(lengths);
  std::string x;
  std::vector<int> v;
  while (std::getline(ss, x, ',')) v.push_back(std::stoi(x));
  ASSERT_EQ(v.size(), 2 * in.size()) << lengths;
  int uuids = 0, hashed = 0, raw = 0;
  for (size_t i = 0; i < v.size(); i += 2) {
    EXPECT_EQ(v[i + 1], 14);
    uuids += v[i] == 16;
    hashed += v[i] == 17;
    raw += v[i] == 5;
  }
  EXPECT_EQ(uuids, 50);
  EXPECT_EQ(hashed, 1);
  EXPECT_EQ(raw, 1);
}

TEST_F(RedisDedupeTest, AnotherHostSeesTheClaimsWithNothingToRestore) {
  auto& a = start();
  a.process({event("a", 0), event("b", 1)});
  ASSERT_TRUE(a.prepare_commit().is_ok());
  // The partition moves to a stage on another host (its own instance and host API).
  FakeHost other;
  TransformHarness b(library(), "dedupe-redis", config(), &other);
  ASSERT_TRUE(b.ok()) << b.create_status().message();
  ASSERT_TRUE(b.assign({part(0, "events-0", 2)}).is_ok());
  auto out = b.process({event("a", 0), event("a", 2), event("c", 3)});
  EXPECT_THAT(out.kept, ElementsAre(0u, 2u));  // replay of the owner, a new id
}

TEST_F(RedisDedupeTest, BadSettingsNameTheKey) {
  struct Case {
    Pairs cfg;
    std::string key;
  };
  const std::string s = redis_->address();
  std::vector<Case> cases = {
      {{{"id.json", "/id"}, {"retention.max.age", "1000"}}, "shards"},
      {{{"id.json", "/id"}, {"retention.max.age", "1000"}, {"shards", "localhost"}}, "shards"},
      {{{"id.json", "/id"}, {"retention.max.age", "1000"}, {"shards", "h:70000"}}, "shards"},
      {{{"id.json", "/id"}, {"retention.max.age", "1000"}, {"shards", s}, {"shards", s}}, "shards"},
      {{{"id.json", "/id"}, {"shards", s}}, "retention.max.age"},
      {{{"id.json", "/id"}, {"retention.max.age", "10000"}, {"shards", s}, {"shards.previous", s}},
       "shards.cutover"},
      {{{"id.json", "/id"}, {"retention.max.age", "10000"}, {"shards", s}, {"shards.previous", s},
        {"shards.cutover", "tomorrow"}},
       "shards.cutover"},
      {{{"id.json", "/id"}, {"retention.max.age", "10000"}, {"shards", s}, {"bucket.span", "500"}},
       "bucket.span"},
      {{{"id.json", "/id"}, {"retention.max.age", "10000"}, {"shards", s}, {"durability", "fsync"}},
       "durability"},
      {{{"id.json", "/id"}, {"retention.max.age", "10000"}, {"shards", s},
        {"durability.replicas", "0"}},
       "durability.replicas"},
      {{{"retention.max.age", "10000"}, {"shards", s}}, "id"},
  };
  for (auto& c : cases) {
    TransformHarness t(library(), "dedupe-redis", c.cfg);
    EXPECT_FALSE(t.ok());
    EXPECT_EQ(t.create_status().code(), EX_ERR_CONFIG) << t.create_status().message();
    EXPECT_EQ(t.create_status().key(), c.key) << t.create_status().message();
  }
  // A UTC time is accepted.
  Pairs ok = {{"id.json", "/id"}, {"retention.max.age", "10000"}, {"shards", s},
              {"shards.previous", s + "0"}, {"shards.cutover", "2026-11-23T12:30:00Z"}};
  ok[4].second = "2026-11-23T12:30:00Z";
  ok[3].second = "127.0.0.1:1";
  TransformHarness t(library(), "dedupe-redis", ok);
  EXPECT_TRUE(t.ok()) << t.create_status().message();
}

}  // namespace
}  // namespace dedupe_test
