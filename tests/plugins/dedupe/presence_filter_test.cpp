// The presence filter in front of the store: never "absent" for a key it was given, few
// false "maybe"s, and it keeps both as it grows past its first size.
#include <gtest/gtest.h>

#include <random>

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

}  // namespace
