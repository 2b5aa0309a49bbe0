// dedupe-redis over several servers: ids spread by a stable hash, and a change of the
// shard list that takes effect at a cutover time without letting a duplicate through.
#include <chrono>
#include <thread>

#include "redis_fixture.hpp"

namespace dedupe_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
int keys(const RedisServer& r) { return std::stoi(r.cli("dbsize")); }

std::vector<OwnedRecord> ids(int from, int to, int64_t offset) {
  std::vector<OwnedRecord> v;
  for (int i = from; i < to; ++i) v.push_back(event("id-" + std::to_string(i), offset++));
  return v;
}

class RedisShardingTest : public RedisDedupeTest {
 protected:
  void SetUp() override {
    RedisDedupeTest::SetUp();
    b_ = std::make_unique<RedisServer>("shard-b");
    c_ = std::make_unique<RedisServer>("shard-c");
  }
  // Two shards A, B -> three A, B, C with a cutover `cutover_in_ms` from now.
  Pairs three(int64_t cutover_in_ms, int64_t grace_ms, Pairs extra = {}) {
    Pairs more = {{"shards.previous", redis_->address()}, {"shards.previous", b_->address()},
                  {"shards.cutover", std::to_string(now_ms() + cutover_in_ms)},
                  {"shards.cutover.grace", std::to_string(grace_ms)}};
    for (auto& kv : extra) more.push_back(kv);
    return config(more, {redis_->address(), b_->address(), c_->address()});
  }
  Pairs two(Pairs extra = {}) { return config(extra, {redis_->address(), b_->address()}); }
  std::unique_ptr<RedisServer> b_, c_;
};

TEST_F(RedisShardingTest, IdsSpreadOverTheShardsAndEveryHostAgrees) {
  auto& t = start(two());
  EXPECT_EQ(t.process(ids(0, 400, 0)).kept.size(), 400u);
  EXPECT_GT(keys(*redis_), 0);
  EXPECT_GT(keys(*b_), 0);
  FakeHost other;
  TransformHarness u(library(), "dedupe-redis", two(), &other);
  ASSERT_TRUE(u.assign({part(0, "events-0")}).is_ok());
  EXPECT_THAT(u.process(ids(0, 400, 1000)).kept, IsEmpty());
}

TEST_F(RedisShardingTest, BeforeTheCutoverClaimsStayInThePreviousLayout) {
  auto& t = start(three(60000, 0));
  EXPECT_EQ(t.process(ids(0, 300, 0)).kept.size(), 300u);
  EXPECT_EQ(keys(*c_), 0);
  EXPECT_THAT(t.process(ids(0, 300, 1000)).kept, IsEmpty());
}

TEST_F(RedisShardingTest, AfterTheCutoverOldClaimsAreFoundAndNewOnesGoToTheNewLayout) {
  auto& t = start(two());
  EXPECT_EQ(t.process(ids(0, 300, 0)).kept.size(), 300u);
  // Hot reload: the shard list grows, the old one becomes shards.previous.
  auto st = t.reconfigure(three(-1000, 0));
  ASSERT_TRUE(st.is_ok()) << st.message();
  // Duplicates of ids claimed before the cutover: all dropped; their owners replay.
  EXPECT_THAT(t.process(ids(0, 300, 1000)).kept, IsEmpty());
  EXPECT_EQ(t.process(ids(0, 300, 0)).kept.size(), 300u);
  // New ids land on all three servers, and only there.
  EXPECT_EQ(t.process(ids(300, 600, 300)).kept.size(), 300u);
  EXPECT_GT(keys(*c_), 0);
  EXPECT_THAT(t.process(ids(300, 600, 2000)).kept, IsEmpty());
  EXPECT_THAT(t.process(ids(0, 600, 3000)).kept, IsEmpty());
}

// Edits that move where claims live are said as WARNINGs on reload (a reshard whose
// cutover is long past counts its previous layout as retired at once; bucket.slices,
// bucket.span and key.prefix put claims elsewhere). A new key.prefix lets duplicates of
// recent ids pass; new bucket values are also refused at the next claim while claims of
// the old live (ANewBucketLayoutIsRefusedWhileClaimsOfTheOldOneLive, below).
TEST_F(RedisShardingTest, EditsThatLoseRecentClaimsAreWarnedOf) {
  auto count_warnings = [&](const std::string& needle) {
    int n = 0;
    for (auto& [level, line] : host_.logs) n += line.find("WARNING") != std::string::npos &&
                                                line.find(needle) != std::string::npos;
    return n;
  };
  auto& t = start(two());
  // A cutover two days ago: retired already (the fixture's window is 10 min).
  Pairs stale = {{"shards.previous", redis_->address()}, {"shards.previous", b_->address()},
                 {"shards.cutover", std::to_string(now_ms() - 2 * 86400 * 1000LL)}};
  ASSERT_TRUE(t.reconfigure(config(stale, {redis_->address(), b_->address(), c_->address()})).is_ok());
  EXPECT_EQ(count_warnings("is so long ago that it is retired already"), 1);

  auto& u = start(two());
  ASSERT_TRUE(u.reconfigure(two({{"bucket.slices", "64"}})).is_ok());
  EXPECT_EQ(count_warnings("bucket.slices changed from 1024 to 64"), 1);
  ASSERT_TRUE(u.reconfigure(two({{"bucket.slices", "64"}, {"key.prefix", "other:"}})).is_ok());
  EXPECT_EQ(count_warnings("key.prefix changed from '' to 'other:'"), 1);
  // A proper reshard (cutover ahead) warns of nothing.
  const size_t before = host_.logs.size();
  ASSERT_TRUE(u.reconfigure(three(60000, 0, {{"bucket.slices", "64"}, {"key.prefix", "other:"}})).is_ok());
  for (size_t i = before; i < host_.logs.size(); ++i)
    EXPECT_EQ(host_.logs[i].second.find("WARNING"), std::string::npos) << host_.logs[i].second;
}

TEST_F(RedisShardingTest, DuringTheGraceAHostNotYetCutOverCannotLetADuplicatePass) {
  // Host X is past the cutover (in the grace); host Y has not reloaded yet.
  auto& x = start(three(-1000, 60000));
  FakeHost other;
  TransformHarness y(library(), "dedupe-redis", two(), &other);
  ASSERT_TRUE(y.assign({part(1, "events-1")}).is_ok());
  // X claims first: Y, on the old layout only, still sees it.
  EXPECT_EQ(x.process(ids(0, 200, 0)).kept.size(), 200u);
  std::vector<OwnedRecord> dup;
  for (int i = 0; i < 200; ++i) dup.push_back(event("id-" + std::to_string(i), i, 1));
  EXPECT_THAT(y.process(dup).kept, IsEmpty());
  // Y claims first: X sees it in the previous layout.
  std::vector<OwnedRecord> fresh;
  for (int i = 200; i < 400; ++i) fresh.push_back(event("id-" + std::to_string(i), i, 1));
  EXPECT_EQ(y.process(fresh).kept.size(), 200u);
  EXPECT_THAT(x.process(ids(200, 400, 1000)).kept, IsEmpty());
}

TEST_F(RedisShardingTest, ThePreviousLayoutIsRetiredOnceItsClaimsHaveExpired) {
  // C alone -> A, B: the previous server is not part of the new layout.
  Pairs small = {{"retention.max.age", "2000"}, {"bucket.span", "1000"}};
  auto& t = start(config(small, {c_->address()}));
  EXPECT_EQ(t.process(ids(0, 100, 0)).kept.size(), 100u);
  Pairs next = small;
  next.insert(next.end(), {{"shards.previous", c_->address()},
                           {"shards.cutover", std::to_string(now_ms())},
                           {"shards.cutover.grace", "0"}});
  ASSERT_TRUE(t.reconfigure(config(next, {redis_->address(), b_->address()})).is_ok());
  EXPECT_THAT(t.process(ids(0, 100, 1000)).kept, IsEmpty());
  // cutover + grace + window + span = 3 s: by then the old claims are gone by TTL.
  std::this_thread::sleep_for(std::chrono::milliseconds(3300));
  EXPECT_EQ(keys(*c_), 0);
  EXPECT_EQ(t.process(ids(1000, 1100, 5000)).kept.size(), 100u);
  bool retired = false;
  for (auto& [level, line] : host_.logs) retired |= line.find("retired") != std::string::npos;
  EXPECT_TRUE(retired);
  // The previous server is not asked any more: stopping it changes nothing.
  c_.reset();
  exactly::sdk::Status st;
  EXPECT_THAT(t.process(ids(1000, 1100, 6000), &st).kept, IsEmpty());
  EXPECT_TRUE(st.is_ok()) << st.message();
}

// bucket.span and bucket.slices decide which key holds a claim: while claims made with
// other values live, the store refuses new ones with a config error naming the key (the
// pipeline stops: nothing is claimed, nothing is lost, no duplicate passes), on another
// host, after a restart and after a reload alike; deleting the mark accepts the change.
TEST_F(RedisShardingTest, ANewBucketLayoutIsRefusedWhileClaimsOfTheOldOneLive) {
  auto& t = start(two());
  EXPECT_EQ(t.process(ids(0, 300, 0)).kept.size(), 300u);

  FakeHost other;  // another host, or this one restarted with the edited file
  TransformHarness u(library(), "dedupe-redis", two({{"bucket.slices", "64"}}), &other);
  ASSERT_TRUE(u.assign({part(0, "events-0")}).is_ok());
  exactly::sdk::Status st;
  EXPECT_THAT(u.process(ids(0, 300, 5000), &st).kept, IsEmpty());
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_EQ(st.key(), "bucket.slices");
  EXPECT_THAT(st.message(), HasSubstr("bucket.slices=1024"));
  EXPECT_THAT(st.message(), HasSubstr("bucket.slices=64"));
  EXPECT_THAT(st.message(), HasSubstr("layout' on every shard"));

  // A reload on the running host: applied (with a WARNING), refused at the next claim.
  ASSERT_TRUE(t.reconfigure(two({{"bucket.span", "300000"}})).is_ok());
  st = {};
  EXPECT_THAT(t.process(ids(300, 310, 300), &st).kept, IsEmpty());
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_EQ(st.key(), "bucket.span");
  // Back to the old values: the claims are all still found.
  ASSERT_TRUE(t.abort().is_ok());
  ASSERT_TRUE(t.reconfigure(two()).is_ok());
  st = {};
  EXPECT_THAT(t.process(ids(0, 300, 1000), &st).kept, IsEmpty());
  EXPECT_TRUE(st.is_ok()) << st.message();

  // The operator's way to accept the change: delete the mark on every shard.
  for (const RedisServer* r : {redis_.get(), b_.get()})
    EXPECT_EQ(r->cli("eval \"return redis.call('DEL', unpack(redis.call('KEYS', '*:layout')))\" 0"), "1");
  ASSERT_TRUE(u.abort().is_ok());
  st = {};
  // Most of them pass as new ids (those whose slice number is the same under both values,
  // about 1 in 16 here, are still found).
  EXPECT_GT(u.process(ids(0, 300, 5000), &st).kept.size(), 250u) << st.message();
  EXPECT_TRUE(st.is_ok()) << st.message();
}

}  // namespace
}  // namespace dedupe_test
