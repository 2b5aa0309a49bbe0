// The presence filter in front of the store: never "absent" for a key it was given, few
// false "maybe"s, and it keeps both as it grows past its first size.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "presence_filter.hpp"

namespace {

TEST(PresenceFilter, NoFalseNegativesAndFewFalsePositivesWhileItGrows) {
  exactly::dedupe::PresenceFilter f(100000);  // then grows by layers to 1M
  std::mt19937_64 rng(7);
  std::vector<uint64_t> in(1000000);
  for (auto& h : in) {
    h = rng();
    f.add(h);
  }
  for (uint64_t h : in) ASSERT_TRUE(f.may_contain(h));
  size_t fp = 0;
  const size_t probes = 1000000;
  for (size_t i = 0; i < probes; ++i) fp += f.may_contain(rng());
  double rate = static_cast<double>(fp) / probes;
  std::printf("false positives %.3f%%, %llu bytes for %zu keys (%.1f bits/key)\n", rate * 100,
              static_cast<unsigned long long>(f.bytes()), in.size(), f.bytes() * 8.0 / in.size());
  EXPECT_LT(rate, 0.05);  // layers add up: ~1% each when full
  EXPECT_LT(f.bytes() * 8.0 / in.size(), 40.0);
}

// A fold adds its keys on its own thread while the pipeline thread keeps reading: into
// the last layer when it has room, else into a new layer appended at end_adds. Keys
// added before stay present throughout, the new ones are present after end_adds, and
// the counts (which decide when the store rebuilds the filter) include them.
void background_adds(size_t before, size_t during) {
  exactly::dedupe::PresenceFilter f(600000);
  std::mt19937_64 rng(11);
  std::vector<uint64_t> old_keys(before), new_keys(during);
  for (auto& h : old_keys) f.add(h = rng());
  for (auto& h : new_keys) h = rng();
  const size_t layers_before = f.layers();
  f.begin_adds(new_keys.size());
  std::atomic<bool> done{false};
  std::thread adder([&] {
    for (uint64_t h : new_keys) {
      __builtin_prefetch(f.background_block(h));  // as the fold thread does
      f.add_background(h);
    }
    done.store(true);
  });
  size_t missing = 0, rounds = 0;
  while (!done.load() || rounds == 0) {  // the reader's view while the adds run
    for (size_t i = 0; i < old_keys.size(); i += 97) missing += !f.may_contain(old_keys[i]);
    ++rounds;
  }
  adder.join();
  f.end_adds();
  EXPECT_EQ(missing, 0u) << "a key added before went missing while the fold's keys were added";
  for (uint64_t h : old_keys) ASSERT_TRUE(f.may_contain(h));
  for (uint64_t h : new_keys) ASSERT_TRUE(f.may_contain(h));
  EXPECT_EQ(f.count(), before + during);
  EXPECT_EQ(f.layers(), layers_before + (before + during > 600000 ? 1 : 0));
  size_t fp = 0;
  for (size_t i = 0; i < 200000; ++i) fp += f.may_contain(rng());
  EXPECT_LT(fp, 200000 * 0.03);
  // The filter grows on from there by ordinary adds.
  for (size_t i = 0; i < 700000; ++i) f.add(rng());
  for (uint64_t h : new_keys) ASSERT_TRUE(f.may_contain(h));
}

TEST(PresenceFilter, BackgroundAddsIntoTheLastLayerWhenItHasRoom) { background_adds(200000, 300000); }

TEST(PresenceFilter, BackgroundAddsIntoANewLayerWhenTheLastIsFull) { background_adds(500000, 400000); }

}  // namespace
