// The claim tables grow in place (mremap) and keep their memory across clears: every
// claim must still be found after growths, a reserve, clears and the give-back, and a
// cleared table must find nothing of its last fill.
#include <gtest/gtest.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <string>
#include <utility>
#include <vector>

#include "round_claims.hpp"

namespace {

using exactly::dedupe::MappedArray;
using exactly::dedupe::RoundClaims;

std::string key(size_t i, size_t fill = 0) { return "id-" + std::to_string(fill) + "-" + std::to_string(i); }
uint64_t hash(const std::string& k) { return XXH3_64bits(k.data(), k.size()); }

void fill(RoundClaims& t, size_t n, size_t round) {
  for (size_t i = 0; i < n; ++i) {
    std::string k = key(i, round);
    t.upsert(k, hash(k), i, static_cast<int64_t>(i) * 3, round);
  }
}

void expect_all(const RoundClaims& t, size_t n, size_t round) {
  ASSERT_EQ(t.size(), n);
  for (size_t i = 0; i < n; ++i) {
    std::string k = key(i, round);
    const auto* c = t.find(k, hash(k));
    ASSERT_NE(c, nullptr) << k;
    EXPECT_EQ(c->seq, i);
    EXPECT_EQ(c->offset, static_cast<int64_t>(i) * 3);
    EXPECT_EQ(t.key_of(*c), k);
  }
}

TEST(MappedArray, GrowsInPlaceKeepingContents) {
  MappedArray<uint64_t> a;
  for (uint64_t i = 0; i < 3'000'000; ++i) a.push_back(i * 7);  // several mremaps past 2 MiB
  ASSERT_EQ(a.size(), 3'000'000u);
  for (uint64_t i = 0; i < a.size(); i += 997) ASSERT_EQ(a[i], i * 7);
  EXPECT_EQ(a[a.size() - 1], uint64_t{2'999'999} * 7);
  a.assign_zeros(1000);
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(a[i], 0u);
  MappedArray<uint64_t> b(std::move(a));
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_TRUE(a.empty());
}

TEST(RoundClaims, FindsEveryClaimAcrossGrowthsAndClears) {
  RoundClaims t;
  fill(t, 300'000, 1);
  expect_all(t, 300'000, 1);
  t.clear();
  EXPECT_TRUE(t.empty());
  std::string old = key(5, 1);
  EXPECT_EQ(t.find(old, hash(old)), nullptr);  // memory kept, contents gone
  fill(t, 200'000, 2);
  expect_all(t, 200'000, 2);
}

TEST(RoundClaims, ReserveThenFillAndUpsert) {
  RoundClaims t;
  fill(t, 1000, 3);
  t.reserve(500'000, 12);  // rehashes the claims already there
  expect_all(t, 1000, 3);
  fill(t, 0, 4);
  for (size_t i = 0; i < 1000; ++i) {
    std::string k = key(i, 3);
    t.upsert(k, hash(k), i + 1, -1, 9);
  }
  ASSERT_EQ(t.size(), 1000u);
  std::string k = key(17, 3);
  EXPECT_EQ(t.find(k, hash(k))->seq, 18u);
}

// upsert probes once: a new key goes to the first empty slot, through growths, and a
// key already there is updated in place, never added twice.
TEST(RoundClaims, UpsertAddsNewKeysAndUpdatesOldOnesThroughGrowths) {
  RoundClaims t;
  for (size_t i = 0; i < 200'000; ++i) {  // from 1,024 slots up: several growths
    std::string k = key(i, 5);
    t.upsert(k, hash(k), i, static_cast<int64_t>(i) * 3, 5);
  }
  expect_all(t, 200'000, 5);
  for (size_t i = 0; i < 200'000; i += 2) {
    std::string k = key(i, 5);
    t.upsert(k, hash(k), i + 7, -2, 6);
  }
  ASSERT_EQ(t.size(), 200'000u);
  for (size_t i = 0; i < 200'000; ++i) {
    std::string k = key(i, 5);
    const auto* c = t.find(k, hash(k));
    ASSERT_NE(c, nullptr) << k;
    EXPECT_EQ(c->seq, i % 2 == 0 ? i + 7 : i);
    EXPECT_EQ(c->fingerprint, i % 2 == 0 ? 6u : 5u);
  }
  std::string absent = key(3, 9);
  EXPECT_EQ(t.find(absent, hash(absent)), nullptr);
}

TEST(RoundClaims, AdoptsASlotArrayMadeElsewhere) {
  RoundClaims t;
  fill(t, 5000, 7);
  t.reserve_entries(100'000, 12);
  MappedArray<uint64_t> slots;
  slots.assign_zeros(RoundClaims::slots_for(100'000));
  t.adopt_slots(std::move(slots));  // rehashes the 5,000 claims into it
  expect_all(t, 5000, 7);
  for (size_t i = 5000; i < 100'000; ++i) {  // fills without growing
    std::string k = key(i, 7);
    t.upsert(k, hash(k), i, static_cast<int64_t>(i) * 3, 7);
  }
  expect_all(t, 100'000, 7);
  MappedArray<uint64_t> small;
  small.assign_zeros(1024);
  t.adopt_slots(std::move(small));  // smaller than what it has: ignored
  expect_all(t, 100'000, 7);
}

// A table doubles only past 3/4 of its slots: the default fold threshold (64 MiB / 48 =
// 1,398,101 claims) and a fill that overshoots it by 1/8 fit 2M slots (16 MB; at 1/2 it
// took 4M), and a table filled to exactly 3/4 keeps its slot array.
TEST(RoundClaims, FillsThreeQuartersOfItsSlotsBeforeGrowing) {
  EXPECT_EQ(RoundClaims::slots_for(1'398'101 + 1'398'101 / 8), size_t{1} << 21);
  EXPECT_EQ(RoundClaims::slots_for(3072), 4096u);
  EXPECT_EQ(RoundClaims::slots_for(3073), 8192u);
  RoundClaims t;
  t.reserve(3072, 16);
  const size_t slot_bytes = t.ranges()[0].second;
  EXPECT_EQ(slot_bytes, 4096 * sizeof(uint64_t));
  fill(t, 3072, 4);
  EXPECT_EQ(t.ranges()[0].second, slot_bytes);  // no growth up to 3/4
  expect_all(t, 3072, 4);
  std::string k = key(3072, 4);
  t.upsert(k, hash(k), 3072, 3072 * 3, 4);
  EXPECT_EQ(t.ranges()[0].second, 2 * slot_bytes);  // the next claim doubles it
  expect_all(t, 3073, 4);
}

TEST(RoundClaims, GivesBackABurstAfterSmallFills) {
  RoundClaims t;
  fill(t, 400'000, 5);
  t.clear();
  for (size_t round = 6; round < 20; ++round) {  // small fills: past the give-back
    fill(t, 50, round);
    expect_all(t, 50, round);
    t.clear();
  }
  fill(t, 100'000, 30);  // and it grows again
  expect_all(t, 100'000, 30);
}

}  // namespace

namespace {

// A round claims into the table holding earlier rounds' claims; an abort takes its
// claims out (truncate) and puts back what it replaced: the table must answer exactly
// as before the round, through a growth of the slot array in the middle of the round.
TEST(RoundClaims, AnAbortedRoundLeavesTheTableAsItWasThroughAGrowth) {
  RoundClaims t;
  fill(t, 20'000, 1);  // earlier rounds
  const size_t keep = t.size(), key_bytes = t.key_bytes();
  std::vector<std::pair<uint32_t, RoundClaims::Claim>> replaced;
  for (size_t i = 0; i < 50'000; ++i) {  // 20k -> 70k claims: the slots grow twice
    // Every tenth claim is an id of an earlier round claimed again (replaced in place).
    std::string k = i % 10 == 0 ? key(i / 10, 1) : key(i, 2);
    RoundClaims::Claim old{};
    bool was = false;
    const uint32_t index = t.claim(k, hash(k), 1'000'000 + i, 7, 9, &old, &was);
    EXPECT_EQ(was, i % 10 == 0) << k;
    if (was) replaced.emplace_back(index, old);
    ASSERT_EQ(t.key_of(t.at(index)), k);
  }
  EXPECT_EQ(t.size(), keep + 45'000);
  t.truncate(keep, key_bytes);
  for (auto r = replaced.rbegin(); r != replaced.rend(); ++r) t.put_back(r->first, r->second);
  expect_all(t, 20'000, 1);
  EXPECT_EQ(t.key_bytes(), key_bytes);
  for (size_t i = 1; i < 50'000; i += 10) {
    std::string k = key(i, 2);
    EXPECT_EQ(t.find(k, hash(k)), nullptr) << k;
  }
  // The table goes on taking claims after the abort.
  std::string k = key(1, 3);
  RoundClaims::Claim old{};
  bool was = true;
  t.claim(k, hash(k), 5, 5, 5, &old, &was);
  EXPECT_FALSE(was);
  ASSERT_NE(t.find(k, hash(k)), nullptr);
  EXPECT_EQ(t.find(k, hash(k))->offset, 5);
}

// reserve_more: claims made after it move neither the claims nor the slots, so pointers
// taken before them stay valid (DedupeTransform::process keeps step 2's answers).
TEST(RoundClaims, ClaimsAfterReserveMoreMoveNothing) {
  RoundClaims t;
  fill(t, 1'000, 1);
  std::string first = key(0, 1);
  t.reserve_more(100'000, 100'000 * 12);
  const RoundClaims::Claim* p = t.find(first, hash(first));
  ASSERT_NE(p, nullptr);
  for (size_t i = 0; i < 100'000; ++i) {
    std::string k = key(i, 4);
    RoundClaims::Claim old{};
    bool was = false;
    t.claim(k, hash(k), i, 1, 1, &old, &was);
  }
  EXPECT_EQ(t.find(first, hash(first)), p);
  EXPECT_EQ(p->seq, 0u);
}

}  // namespace

// Long ids fill the key arena past 4 GiB within one fill (65536 of them at the 65536-byte
// `id.max.bytes`, each with the byte a long id gets): every key past that point must
// still read back as itself and be found (a 32-bit key position wrapped and pointed
// back into the first keys).
TEST(RoundClaims, KeysPastFourGibOfArenaReadBackWhole) {
  constexpr size_t kKeyBytes = 65537;
  constexpr size_t kKeys = (size_t{1} << 32) / kKeyBytes + 16;
  RoundClaims t;
  std::string k(kKeyBytes, '\0');
  auto make = [&](size_t i) {
    std::string s = "long-" + std::to_string(i) + "-";
    std::copy(s.begin(), s.end(), k.begin());
    k[kKeyBytes - 1] = static_cast<char>(i);
    return hash(k);
  };
  for (size_t i = 0; i < kKeys; ++i) t.upsert(k, make(i), i, static_cast<int64_t>(i), 0);
  ASSERT_GT(t.key_bytes(), size_t{1} << 32);
  ASSERT_EQ(t.size(), kKeys);
  for (size_t i = kKeys - 32; i < kKeys; ++i) {
    const uint64_t h = make(i);
    const auto* c = t.find(k, h);
    ASSERT_NE(c, nullptr) << "key " << i;
    EXPECT_EQ(c->seq, i);
    EXPECT_EQ(c->key_len, kKeyBytes);
    EXPECT_TRUE(t.key_of(*c) == k) << "key " << i << " reads back as another";
  }
}
