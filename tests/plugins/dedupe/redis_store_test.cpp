// dedupe-redis and its Redis server: buckets expire as a whole after the window, a
// server that is down or restarting is a retriable error (never a crash), and
// prepare_commit waits for what `durability` promises.
#include <chrono>
#include <thread>

#include "redis_fixture.hpp"

namespace dedupe_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

int key_count(const RedisServer& r) { return std::stoi(r.cli("dbsize")); }

TEST_F(RedisDedupeTest, BucketsExpireAsAWholeAfterTheWindow) {
  // A 2 s window in slots of 1 s: a claim lives 2-3 s.
  auto& t = start(config({{"retention.max.age", "2000"}, {"bucket.span", "1000"},
                          {"bucket.slices", "4"}}));
  std::vector<OwnedRecord> in;
  for (int i = 0; i < 40; ++i) in.push_back(event("id-" + std::to_string(i), i));
  EXPECT_EQ(t.process(in).kept.size(), 40u);
  const int keys = key_count(*redis_);
  EXPECT_GE(keys, 1);
  EXPECT_LE(keys, 9);  // at most 4 slices in each of the (at most two) slots written, and
                      // the layout mark (which expires with the newest of them)
  const long pttl = std::stol(redis_->cli("pttl \"$(redis-cli -p " + std::to_string(redis_->port()) +
                                          " --scan | head -1)\""));
  EXPECT_GT(pttl, 1000);
  EXPECT_LE(pttl, 3000);
  // Within the window: duplicates.
  EXPECT_THAT(t.process({event("id-1", 100)}).kept, IsEmpty());
  std::this_thread::sleep_for(std::chrono::milliseconds(3300));
  EXPECT_EQ(key_count(*redis_), 0);
  // After it: the id is new again.
  EXPECT_THAT(t.process({event("id-1", 101)}).kept, ElementsAre(0u));
}

// A server with requirepass: the stage authenticates with `password`; a missing or wrong
// one is a config error naming the key (the pipeline stops, as for a wrong Kafka
// password), not a fatal error that restarts it forever.
TEST_F(RedisDedupeTest, APasswordProtectedServerIsUsedWithPasswordAndRefusedWithoutIt) {
  RedisServer locked("auth", "", "--requirepass s3cret-pw");
  auto cfg = [&](Pairs extra) { return config(extra, {locked.address()}); };
  {
    auto& t = start(cfg({{"password", "s3cret-pw"}}));
    EXPECT_EQ(t.process({event("a", 0), event("b", 1)}).kept.size(), 2u);
    EXPECT_THAT(t.process({event("a", 2)}).kept, IsEmpty());
  }
  for (const auto& extra : {Pairs{}, Pairs{{"password", "wrong"}}}) {
    auto& t = start(cfg(extra));
    exactly::sdk::Status st;
    EXPECT_THAT(t.process({event("c", 0)}, &st).kept, IsEmpty());
    EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
    EXPECT_EQ(st.key(), "password") << st.message();
    EXPECT_EQ(st.message().find("s3cret-pw"), std::string::npos) << st.message();
  }
  TransformHarness bad(library(), "dedupe-redis", cfg({{"username", "ops"}}));
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.create_status().key(), "username");
  // A password given to a server that has none: the same config error (it was a fatal
  // error, restarted for ever).
  auto& open_server = start(config({{"password", "not-needed-pw"}}));
  exactly::sdk::Status st;
  EXPECT_THAT(open_server.process({event("d", 0)}, &st).kept, IsEmpty());
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_EQ(st.key(), "password") << st.message();
  EXPECT_THAT(st.message(), HasSubstr("the server has no password"));
}

TEST_F(RedisDedupeTest, ARedisServerDownIsRetriableAndTheReplayComesOut) {
  auto& t = start(config({{"redis.timeout", "1000"}}));
  EXPECT_THAT(t.process({event("a", 0), event("b", 1)}).kept, ElementsAre(0u, 1u));
  redis_->kill9();  // no persistence: the claims are gone with it
  exactly::sdk::Status st;
  t.process({event("c", 2)}, &st);
  EXPECT_EQ(st.code(), EX_ERR_RETRIABLE) << st.message();
  EXPECT_THAT(st.message(), HasSubstr(redis_->address()));
  st = t.prepare_commit();
  EXPECT_TRUE(st.is_ok()) << st.message();  // durability: none waits for nothing
  // The pipeline aborts the round and replays it once the server is back.
  ASSERT_TRUE(t.abort().is_ok());
  redis_->start();
  EXPECT_THAT(t.process({event("c", 2), event("c", 3)}).kept, ElementsAre(0u));
}

TEST_F(RedisDedupeTest, AServerThatDoesNotAnswerInTimeIsRetriable) {
  // CLIENT PAUSE holds every client's commands past the timeout: a timeout, retriable.
  auto& t = start(config({{"redis.timeout", "300"}}));
  EXPECT_THAT(t.process({event("a", 0)}).kept, ElementsAre(0u));
  redis_->cli("client pause 1500 ALL");
  exactly::sdk::Status st;
  t.process({event("b", 1)}, &st);
  EXPECT_EQ(st.code(), EX_ERR_RETRIABLE) << st.message();
  // Said as a timeout (hiredis reports it as the read's EAGAIN).
  EXPECT_THAT(st.message(), HasSubstr("no answer within redis.timeout (300 ms)"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  // The next call reconnects (a fresh connection: no stale reply is read); b's claim
  // may or may not have been made, and b@1 comes out either way (its own claim).
  EXPECT_THAT(t.process({event("b", 1), event("a", 2)}).kept, ElementsAre(0u));
}

// A server at its maxmemory (noeviction) refuses the claims: retriable, since memory may
// be freed, and the message says what to do about it, not only Redis's own OOM line (QA:
// retried for ever with no hint). With room again, the round goes through.
TEST_F(RedisDedupeTest, AFullServerIsRetriableAndSaysWhatToDo) {
  auto& t = start();
  EXPECT_THAT(t.process({event("a", 0)}).kept, ElementsAre(0u));
  redis_->cli("config set maxmemory-policy noeviction");
  redis_->cli("config set maxmemory 1");
  exactly::sdk::Status st;
  t.process({event("b", 1)}, &st);
  EXPECT_EQ(st.code(), EX_ERR_RETRIABLE) << st.message();
  EXPECT_THAT(st.message(), HasSubstr("OOM"));
  EXPECT_THAT(st.message(), HasSubstr("raise it, or keep fewer ids with a shorter retention.max.age"));
  redis_->cli("config set maxmemory 0");
  ASSERT_TRUE(t.abort().is_ok());
  EXPECT_THAT(t.process({event("b", 2), event("a", 3)}).kept, ElementsAre(0u));
}

TEST_F(RedisDedupeTest, ALostScriptCacheFallsBackToEval) {
  auto& t = start();
  EXPECT_THAT(t.process({event("a", 0)}).kept, ElementsAre(0u));
  redis_->cli("script flush");
  EXPECT_THAT(t.process({event("a", 1), event("b", 2)}).kept, ElementsAre(1u));
  EXPECT_THAT(t.process({event("b", 3)}).kept, IsEmpty());
}

TEST_F(RedisDedupeTest, AofAlwaysIsCheckedOnTheServer) {
  auto& t = start(config({{"durability", "aof-always"}}));
  t.process({event("a", 0)});
  auto st = t.prepare_commit();
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_EQ(st.key(), "durability");
  EXPECT_THAT(st.message(), HasSubstr("appendonly no"));

  RedisServer aof("aof", "always");
  auto& u = start(config({{"durability", "aof-always"}}, {aof.address()}));
  u.process({event("a", 0)});
  st = u.prepare_commit();
  EXPECT_TRUE(st.is_ok()) << st.message();
}

TEST_F(RedisDedupeTest, ReplicasAreWaitedFor) {
  auto& t = start(config({{"durability", "replicas"}, {"durability.timeout", "200"}}));
  t.process({event("a", 0)});
  auto st = t.prepare_commit();
  EXPECT_EQ(st.code(), EX_ERR_RETRIABLE) << st.message();
  EXPECT_THAT(st.message(), HasSubstr("only 0 of 1 replicas"));
  // A durability.timeout longer than redis.timeout: the server's answer to WAIT comes
  // after it, and is waited for (the receive was cut at redis.timeout, "no answer").
  auto& longer = start(config({{"durability", "replicas"}, {"durability.timeout", "1200"}, {"redis.timeout", "300"}}));
  longer.process({event("z", 0)});
  st = longer.prepare_commit();
  EXPECT_EQ(st.code(), EX_ERR_RETRIABLE) << st.message();
  EXPECT_THAT(st.message(), HasSubstr("only 0 of 1 replicas acknowledged the round's claims within 1200 ms"));

  RedisServer replica("replica", "", "--replicaof 127.0.0.1 " + std::to_string(redis_->port()));
  // In sync once the replica says its link is up (the primary waits
  // repl-diskless-sync-delay, 5 s, before the first transfer).
  for (int i = 0; i < 300 && replica.cli("info replication").find("master_link_status:up") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_NE(replica.cli("info replication").find("master_link_status:up"), std::string::npos);
  auto& u = start(config({{"durability", "replicas"}, {"durability.timeout", "5000"}}));
  EXPECT_THAT(u.process({event("a", 0), event("b", 1)}).kept, ElementsAre(0u, 1u));
  st = u.prepare_commit();
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(replica.cli("dbsize"), redis_->cli("dbsize"));
}

TEST_F(RedisDedupeTest, AnEvictingServerIsRefused) {
  RedisServer lru("lru", "", "--maxmemory-policy allkeys-lru");
  auto& t = start(config({}, {lru.address()}));
  exactly::sdk::Status st;
  t.process({event("a", 0)}, &st);
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_EQ(st.key(), "shards");
  EXPECT_THAT(st.message(), HasSubstr("maxmemory-policy allkeys-lru"));
}

}  // namespace
}  // namespace dedupe_test
