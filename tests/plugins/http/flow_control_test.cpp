// Token bucket and fuse as plain arithmetic over a clock the test moves.
#include <gtest/gtest.h>

#include "fuse.hpp"
#include "token_bucket.hpp"

namespace {

using exactly::http::Clock;
using exactly::http::Fuse;
using exactly::http::TokenBucket;
using namespace std::chrono_literals;

TEST(TokenBucket, BurstThenRate) {
  auto t0 = Clock::now();
  TokenBucket b(10, 3, t0);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(b.try_take(t0));
  EXPECT_FALSE(b.try_take(t0));
  EXPECT_GT(b.next_token(t0), t0 + 90ms);
  EXPECT_FALSE(b.try_take(t0 + 50ms));
  EXPECT_TRUE(b.try_take(t0 + 101ms));
  // A long idle time earns no more than the burst.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(b.try_take(t0 + 10s));
  EXPECT_FALSE(b.try_take(t0 + 10s));
}

TEST(TokenBucket, ZeroRateIsUnlimitedAndALiveEditKeepsTokens) {
  auto t0 = Clock::now();
  TokenBucket b(0, 0, t0);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(b.try_take(t0));
  TokenBucket c(10, 10, t0);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(c.try_take(t0));
  c.set(1, 5, t0);  // 2 tokens left, no fresh burst
  EXPECT_TRUE(c.try_take(t0));
  EXPECT_TRUE(c.try_take(t0));
  EXPECT_FALSE(c.try_take(t0));
}

TEST(Fuse, OpensAfterFailuresProbesOnceAndClosesOnAnswer) {
  auto t0 = Clock::now();
  Fuse f;
  f.configure(false, 2, 1000ms);
  EXPECT_EQ(f.decide(t0), Fuse::Decision::send);
  EXPECT_FALSE(f.on_failure(t0, false));
  f.on_answer();  // a success in between resets the count
  EXPECT_FALSE(f.on_failure(t0, false));
  EXPECT_TRUE(f.on_failure(t0, false));
  EXPECT_TRUE(f.rejecting(t0 + 999ms));
  EXPECT_EQ(f.decide(t0 + 999ms), Fuse::Decision::reject);
  EXPECT_EQ(f.decide(t0 + 1s), Fuse::Decision::probe);
  EXPECT_EQ(f.decide(t0 + 1s), Fuse::Decision::wait);  // one probe at a time
  EXPECT_TRUE(f.on_failure(t0 + 1100ms, true));       // failed probe: open again
  EXPECT_EQ(f.decide(t0 + 1500ms), Fuse::Decision::reject);
  EXPECT_EQ(f.decide(t0 + 2100ms), Fuse::Decision::probe);
  f.on_answer();
  EXPECT_EQ(f.state(), Fuse::State::closed);
  EXPECT_EQ(f.decide(t0 + 2100ms), Fuse::Decision::send);
}

TEST(Fuse, TurningItOffOrLiftingOpenByHandClosesAnOpenFuse) {
  auto t0 = Clock::now();
  Fuse f;
  f.configure(false, 1, 1h);
  EXPECT_TRUE(f.on_failure(t0, false));
  EXPECT_EQ(f.decide(t0), Fuse::Decision::reject);
  f.configure(false, 0, 1h);  // fuse.failures: 0, "never"
  EXPECT_EQ(f.state(), Fuse::State::closed);
  EXPECT_EQ(f.decide(t0), Fuse::Decision::send);
  EXPECT_FALSE(f.on_failure(t0, false));  // and it stays off
  EXPECT_EQ(f.decide(t0), Fuse::Decision::send);

  f.configure(false, 1, 1h);
  EXPECT_TRUE(f.on_failure(t0, false));
  f.configure(true, 1, 1h);  // open: true
  EXPECT_EQ(f.decide(t0), Fuse::Decision::reject);
  f.configure(false, 1, 1h);  // open: false again: the operator says go
  EXPECT_EQ(f.decide(t0), Fuse::Decision::send);
  // Any other edit leaves an open fuse open.
  EXPECT_TRUE(f.on_failure(t0, false));
  f.configure(false, 2, 1h);
  EXPECT_EQ(f.decide(t0), Fuse::Decision::reject);
}

TEST(Fuse, OpenByHandStaysOpen) {
  auto t0 = Clock::now();
  Fuse f;
  f.configure(true, 0, 1ms);
  EXPECT_EQ(f.decide(t0 + 1h), Fuse::Decision::reject);
  f.on_answer();
  EXPECT_EQ(f.state(), Fuse::State::open);
}

}  // namespace
