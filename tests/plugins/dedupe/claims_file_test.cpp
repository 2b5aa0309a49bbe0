// The store's own claims file (claims_file.hpp): every claim written is found with its
// value, nothing else is, and a damaged file is refused at open rather than read.
#include <gtest/gtest.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "claims_file.hpp"
#include "round_claims.hpp"

namespace {

using exactly::dedupe::ClaimsFile;
using exactly::dedupe::ClaimsFileStats;
using exactly::dedupe::ClaimValue;
using exactly::dedupe::RoundClaims;
using exactly::dedupe::write_claims_file;
namespace fs = std::filesystem;

uint64_t hash(std::string_view k) { return XXH3_64bits(k.data(), k.size()); }

struct Expect {
  uint64_t seq;
  int64_t offset;
  uint64_t fp;
};

class ClaimsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("claims-file-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name = "c.claims") const { return (dir_ / name).string(); }

  void add(const std::string& key, uint64_t seq, int64_t offset, uint64_t fp) {
    table_.upsert(key, hash(key), seq, offset, fp);
    expected_[key] = {seq, offset, fp};
  }
  std::vector<uint32_t> all() const {
    std::vector<uint32_t> v(table_.size());
    for (uint32_t i = 0; i < v.size(); ++i) v[i] = i;
    return v;
  }
  ClaimsFileStats write(uint32_t fp_bytes, uint64_t seq_end, const std::vector<uint32_t>& live) {
    ClaimsFileStats stats;
    std::string error;
    EXPECT_TRUE(write_claims_file(path(), table_, live, fp_bytes, seq_end, stats, error)) << error;
    return stats;
  }
  static uint64_t masked(uint64_t fp, uint32_t bytes) {
    return bytes >= 8 ? fp : fp & ((uint64_t{1} << (8 * bytes)) - 1);
  }
  void expect_all_found(const ClaimsFile& f, uint32_t fp_bytes) {
    for (const auto& [k, e] : expected_) {
      ClaimValue v;
      ASSERT_TRUE(f.find(k, hash(k), v)) << k.size() << "-byte key";
      EXPECT_EQ(v.seq, e.seq);
      EXPECT_EQ(v.offset, e.offset);
      EXPECT_EQ(v.fingerprint, masked(e.fp, fp_bytes));
      EXPECT_EQ(v.fingerprint_bytes, fp_bytes);
    }
  }

  fs::path dir_;
  RoundClaims table_;
  std::map<std::string, Expect> expected_;
};

std::string uuid_bytes(std::mt19937_64& rng) {
  std::string k(16, '\0');
  uint64_t a = rng(), b = rng();
  std::memcpy(k.data(), &a, 8);
  std::memcpy(k.data() + 8, &b, 8);
  return k;
}

TEST_F(ClaimsFileTest, EveryUuidClaimIsFoundWithItsValueAndNoOtherKeyIs) {
  std::mt19937_64 rng(7);
  const uint64_t base = 5'000'000'000ull;  // past 4 bytes: relative to the file, 3 suffice
  for (uint64_t i = 0; i < 50'000; ++i) {
    // Owners mostly at their sequence number, some behind it (duplicates in between),
    // one ahead (a restored store's replays), so the distance is signed.
    int64_t off = static_cast<int64_t>(base + i) + (i % 97 == 0 ? -static_cast<int64_t>(i % 5000) : 0) +
                  (i == 7 ? 3 : 0);
    add(uuid_bytes(rng), base + i, off, rng());
  }
  ClaimsFileStats s = write(4, base + 50'000, all());
  EXPECT_EQ(s.claims, 50'000u);
  EXPECT_EQ(s.key_width, 16u);
  EXPECT_EQ(s.seq_base, base);
  // 2 bytes of relative sequence number (50,000 < 2^16) whatever the store's age, 2 of
  // distance (owners from 4,999 behind to 3 ahead), 4 of fingerprint.
  EXPECT_EQ(s.value_width, 2u + 2u + 4u);
  EXPECT_LT(static_cast<double>(s.bytes) / 50'000.0, 16 + 9 + 2.0);

  ClaimsFile f;
  std::string error;
  ASSERT_TRUE(f.open(path(), true, error)) << error;
  EXPECT_EQ(f.stats().claims, 50'000u);
  EXPECT_EQ(f.stats().seq_end, base + 50'000);
  expect_all_found(f, 4);

  size_t found = 0, passed_filter = 0;
  for (int i = 0; i < 100'000; ++i) {
    std::string k = uuid_bytes(rng);
    ClaimValue v;
    found += f.find(k, hash(k), v);
    passed_filter += f.may_contain(hash(k));
  }
  EXPECT_EQ(found, 0u);
  // ~1% false positives at 10 bits a key; far above that means the filter is broken.
  EXPECT_LT(passed_filter, 3'000u);
  std::string shorter(15, 'x');
  ClaimValue v;
  EXPECT_FALSE(f.find(shorter, hash(shorter), v));
}

TEST_F(ClaimsFileTest, AStoresAgeDoesNotWidenAClaim) {
  // A store past 2^40 records whose owners trail their sequence numbers by a billion
  // duplicates: one fold's claims still need only their spread.
  const uint64_t base = uint64_t{1} << 40;
  for (uint64_t i = 0; i < 1'000; ++i)
    add("old-" + std::to_string(i), base + i, static_cast<int64_t>(base + i) - 1'000'000'000, i);
  ClaimsFileStats s = write(4, base + 1'000, all());
  EXPECT_EQ(s.value_width, 2u + 0u + 4u);  // 1,000 sequence numbers; one distance
  ClaimsFile f;
  std::string error;
  ASSERT_TRUE(f.open(path(), true, error)) << error;
  expect_all_found(f, 4);
}

TEST_F(ClaimsFileTest, KeysOfSeveralLengthsAndTheLongestIdAreFound) {
  for (int i = 0; i < 20'000; ++i) add("order-" + std::to_string(i * 7919), 100 + i, 100 + i, i);
  add(std::string(1, 'a'), 30'000, 30'000, 1);
  add(std::string(65537, 'L'), 30'001, 30'001, 2);  // id.max.bytes' 65536 and the byte a long id gets
  ClaimsFileStats s = write(8, 40'000, all());
  EXPECT_EQ(s.key_width, 0u);
  ClaimsFile f;
  std::string error;
  ASSERT_TRUE(f.open(path(), true, error)) << error;
  expect_all_found(f, 8);
  ClaimValue v;
  std::string absent = "order-1";
  EXPECT_FALSE(f.find(absent, hash(absent), v));
  std::string long_absent(65537, 'M');
  EXPECT_FALSE(f.find(long_absent, hash(long_absent), v));

  // A walk sees every claim once, with its value.
  std::map<std::string, Expect> seen;
  ASSERT_TRUE(f.for_each([&](std::string_view k, const ClaimValue& c) {
    seen[std::string(k)] = {c.seq, c.offset, c.fingerprint};
    return true;
  }));
  ASSERT_EQ(seen.size(), expected_.size());
  for (const auto& [k, e] : expected_) {
    ASSERT_TRUE(seen.count(k));
    EXPECT_EQ(seen[k].seq, e.seq);
    EXPECT_EQ(seen[k].offset, e.offset);
  }
}

TEST_F(ClaimsFileTest, OnlyTheLiveClaimsAreWrittenAndNoFingerprintIsKeptAtZeroBytes) {
  std::vector<uint32_t> live;
  std::vector<std::string> dead;
  for (uint32_t i = 0; i < 5'000; ++i) {
    std::string k = "k" + std::to_string(i);
    table_.upsert(k, hash(k), i, i, 0xabcdef);
    if (i % 3 == 0) {
      dead.push_back(k);
    } else {
      live.push_back(i);
      expected_[k] = {i, i, 0};
    }
  }
  ClaimsFileStats s = write(0, 5'000, live);
  EXPECT_EQ(s.claims, live.size());
  ClaimsFile f;
  std::string error;
  ASSERT_TRUE(f.open(path(), true, error)) << error;
  expect_all_found(f, 0);
  for (const auto& k : dead) {
    ClaimValue v;
    EXPECT_FALSE(f.find(k, hash(k), v)) << k;
  }
}

TEST_F(ClaimsFileTest, AnEmptyFileOpensAndHoldsNothing) {
  write(4, 10, {});
  ClaimsFile f;
  std::string error;
  ASSERT_TRUE(f.open(path(), true, error)) << error;
  EXPECT_EQ(f.stats().claims, 0u);
  ClaimValue v;
  EXPECT_FALSE(f.find("x", hash("x"), v));
  size_t n = 0;
  EXPECT_TRUE(f.for_each([&](std::string_view, const ClaimValue&) { return ++n, true; }));
  EXPECT_EQ(n, 0u);
}

TEST_F(ClaimsFileTest, AClaimAtOrPastTheFileEndIsRefusedAndLeavesNoFile) {
  add("a", 10, 10, 1);
  add("b", 11, 11, 1);
  ClaimsFileStats s;
  std::string error;
  EXPECT_FALSE(write_claims_file(path(), table_, all(), 4, 11, s, error));
  EXPECT_NE(error.find("11"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(path()));
  EXPECT_FALSE(fs::exists(path() + ".tmp"));

  error.clear();
  EXPECT_FALSE(write_claims_file((dir_ / "no-such-dir" / "c.claims").string(), table_, all(), 4, 12, s, error));
  EXPECT_NE(error.find("no-such-dir"), std::string::npos) << error;
}

TEST(ClaimsFileName, OnlyAStoresClaimsFilesAreRecognised) {
  using exactly::dedupe::ClaimsFileName;
  using exactly::dedupe::claims_file_path;
  using exactly::dedupe::parse_claims_file_name;
  uint64_t end = 0;
  EXPECT_EQ(claims_file_path("/s", 42), "/s/claims-42.xc");
  EXPECT_EQ(parse_claims_file_name("claims-42.xc", end), ClaimsFileName::whole);
  EXPECT_EQ(end, 42u);
  EXPECT_EQ(parse_claims_file_name("claims-7.xc.tmp", end), ClaimsFileName::unfinished);
  EXPECT_EQ(end, 7u);
  for (const char* other : {"claims-.xc", "claims-4a.xc", "claims-42.sst", "claims-42.xc.old",
                            "000012.sst", "claims-99999999999999999999.xc", "xclaims-1.xc"})
    EXPECT_EQ(parse_claims_file_name(other, end), ClaimsFileName::other) << other;
}

std::string read_all(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_all(const std::string& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

TEST_F(ClaimsFileTest, EveryDamagedByteAndEveryTruncationIsRefusedAtOpen) {
  for (int i = 0; i < 300; ++i) add("id-" + std::to_string(i * 31), 1000 + i, 1000 + i, i * 77);
  write(4, 2000, all());
  const std::string good = read_all(path());
  ASSERT_GT(good.size(), ClaimsFile::kFooterBytes);
  const std::string bad = path("bad.claims");
  size_t refused = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    std::string b = good;
    b[i] = static_cast<char>(b[i] ^ 0x5a);
    write_all(bad, b);
    ClaimsFile f;
    std::string error;
    if (!f.open(bad, true, error)) {
      ++refused;
      EXPECT_NE(error.find(bad), std::string::npos) << error;
    }
  }
  EXPECT_EQ(refused, good.size());
  for (size_t n : {size_t{0}, size_t{1}, ClaimsFile::kFooterBytes, good.size() - 1}) {
    write_all(bad, good.substr(0, n));
    ClaimsFile f;
    std::string error;
    EXPECT_FALSE(f.open(bad, true, error)) << n << " bytes";
  }
}

TEST_F(ClaimsFileTest, AFileOpenedWithoutItsChecksumNeverReadsOutsideItself) {
  // Damage in the entries passes an open that skips the checksum; lookups and walks must
  // stay within the mapping whatever the bytes say (this file passes under
  // -fsanitize=address,undefined; docs/claims-file.md has the command).
  for (int i = 0; i < 400; ++i) add("v" + std::string(static_cast<size_t>(i % 40), 'x') + std::to_string(i), 10 + i, 10 + i, i);
  write(4, 1000, all());
  const std::string good = read_all(path());
  const std::string bad = path("bad.claims");
  std::mt19937_64 rng(3);
  for (int round = 0; round < 200; ++round) {
    std::string b = good;
    for (int j = 0; j < 8; ++j) b[rng() % (good.size() - ClaimsFile::kFooterBytes)] = static_cast<char>(rng());
    write_all(bad, b);
    ClaimsFile f;
    std::string error;
    if (!f.open(bad, false, error)) continue;
    ClaimValue v;
    for (const auto& [k, e] : expected_) (void)f.find(k, hash(k), v);
    size_t n = 0;
    (void)f.for_each([&](std::string_view, const ClaimValue&) { return ++n, true; });
    EXPECT_LE(n, good.size());
  }
}

}  // namespace

namespace merging {

using exactly::dedupe::merge_claims_files;

struct Claim {
  std::string key;
  uint64_t seq;
  int64_t offset;
  uint64_t fp;
};

// One file of `claims`, as a fold writes it.
ClaimsFile fold(const std::string& path, const std::vector<Claim>& claims, uint32_t fp_bytes,
                uint64_t seq_end) {
  RoundClaims table;
  std::vector<uint32_t> live;
  for (const auto& c : claims) {
    live.push_back(static_cast<uint32_t>(table.size()));  // keys are distinct within a file
    table.upsert(c.key, hash(c.key), c.seq, c.offset, c.fp);
  }
  ClaimsFileStats stats;
  std::string error;
  EXPECT_TRUE(write_claims_file(path, table, live, fp_bytes, seq_end, stats, error)) << error;
  ClaimsFile f;
  EXPECT_TRUE(f.open(path, true, error)) << error;
  return f;
}

TEST_F(ClaimsFileTest, AMergeKeepsEveryLiveClaimOnceAndTheNewestOfAKeyClaimedAgain) {
  std::vector<Claim> a, b, c;
  for (uint64_t i = 0; i < 1000; ++i) a.push_back({"k" + std::to_string(i), i, static_cast<int64_t>(i), 0x1122334455667788ull + i});
  for (uint64_t i = 1000; i < 1900; ++i) b.push_back({"k" + std::to_string(i), i, static_cast<int64_t>(i) + 5, i});
  // k0-k99 were evicted and claimed again: their old claims are below the floor.
  for (uint64_t i = 0; i < 100; ++i) b.push_back({"k" + std::to_string(i), 1900 + i, static_cast<int64_t>(3000 + i), 77});
  // Longer keys (of several lengths), far later owners.
  for (uint64_t i = 0; i < 500; ++i)
    c.push_back({std::string(1 + i % 40, 'x') + std::to_string(i), 2000 + i, static_cast<int64_t>(90'000 + i), i});
  // k500-k509 claimed again while their old claims are still above the floor (a store
  // restored over an older copy can hold both): the newest wins.
  for (uint64_t i = 500; i < 510; ++i) c.push_back({"k" + std::to_string(i), 2000 + i, static_cast<int64_t>(95'000 + i), 9});
  ClaimsFile fa = fold(path("claims-1000.xc"), a, 8, 1000);
  ClaimsFile fb = fold(path("claims-2000.xc"), b, 8, 2000);
  ClaimsFile fc = fold(path("claims-3000.xc"), c, 4, 3000);

  // Into the newest input's name, as a store does: the rename replaces it.
  const uint64_t floor = 200;
  ClaimsFileStats s;
  std::string error;
  ASSERT_TRUE(merge_claims_files(path("claims-3000.xc"), {&fa, &fb, &fc}, floor, 7, s, error)) << error;
  EXPECT_EQ(s.claims, 790u + 1000u + 510u);  // a's k200-k999 but k500-k509, all of b and c
  EXPECT_EQ(s.seq_end, 3000u);
  EXPECT_EQ(s.merged_from, 7u);
  EXPECT_EQ(s.fp_bytes, 4u);  // the narrowest input's
  EXPECT_EQ(s.key_width, 0u);
  EXPECT_FALSE(fs::exists(path("claims-3000.xc.tmp")));

  ClaimsFile m;
  ASSERT_TRUE(m.open(path("claims-3000.xc"), true, error)) << error;
  EXPECT_EQ(m.stats().merged_from, 7u);
  auto expect = [&](const Claim& want, const char* from) {
    ClaimValue v;
    ASSERT_TRUE(m.find(want.key, hash(want.key), v)) << from << " " << want.key;
    EXPECT_EQ(v.seq, want.seq) << want.key;
    EXPECT_EQ(v.offset, want.offset) << want.key;
    EXPECT_EQ(v.fingerprint, masked(want.fp, 4)) << want.key;
  };
  for (uint64_t i = 200; i < 1000; ++i)
    if (i < 500 || i >= 510) expect(a[i], "a");
  for (const auto& w : b) expect(w, "b");
  for (const auto& w : c) expect(w, "c");
  for (uint64_t i = 100; i < 200; ++i) {
    ClaimValue v;
    EXPECT_FALSE(m.find(a[i].key, hash(a[i].key), v)) << "evicted " << a[i].key;
  }
  // Each key once.
  std::map<std::string, int> seen;
  ASSERT_TRUE(m.for_each([&](std::string_view k, const ClaimValue&) {
    ++seen[std::string(k)];
    return true;
  }));
  EXPECT_EQ(seen.size(), s.claims);
  for (const auto& [k, n] : seen) EXPECT_EQ(n, 1) << k;
}

TEST_F(ClaimsFileTest, AStoppedMergeLeavesNoFileAndTheInputsAsTheyWere) {
  std::vector<Claim> a, b;
  for (uint64_t i = 0; i < 3000; ++i) a.push_back({"a" + std::to_string(i), i, static_cast<int64_t>(i), i});
  for (uint64_t i = 0; i < 3000; ++i) b.push_back({"b" + std::to_string(i), 3000 + i, static_cast<int64_t>(3000 + i), i});
  ClaimsFile fa = fold(path("claims-3000.xc"), a, 4, 3000);
  ClaimsFile fb = fold(path("claims-6000.xc"), b, 4, 6000);
  const auto size_before = fs::file_size(path("claims-6000.xc"));
  std::atomic<bool> stop{true};
  ClaimsFileStats s;
  std::string error;
  EXPECT_FALSE(merge_claims_files(path("claims-6000.xc"), {&fa, &fb}, 0, 1, s, error, &stop));
  EXPECT_NE(error.find("stopped"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(path("claims-6000.xc.tmp")));
  EXPECT_EQ(fs::file_size(path("claims-6000.xc")), size_before);
  ClaimsFile again;
  ASSERT_TRUE(again.open(path("claims-6000.xc"), true, error)) << error;
  EXPECT_EQ(again.stats().merged_from, 0u);  // a fold's file
}

TEST_F(ClaimsFileTest, AMergeThatCannotWriteSaysWhichFileAndLeavesItsInputs) {
  std::vector<Claim> a, b;
  for (uint64_t i = 0; i < 100; ++i) a.push_back({"a" + std::to_string(i), i, static_cast<int64_t>(i), i});
  for (uint64_t i = 0; i < 100; ++i) b.push_back({"b" + std::to_string(i), 100 + i, static_cast<int64_t>(100 + i), i});
  ClaimsFile fa = fold(path("claims-100.xc"), a, 4, 100);
  ClaimsFile fb = fold(path("claims-200.xc"), b, 4, 200);
  fs::create_directory(path("claims-200.xc.tmp"));  // where the merged file would be written
  ClaimsFileStats s;
  std::string error;
  EXPECT_FALSE(merge_claims_files(path("claims-200.xc"), {&fa, &fb}, 0, 1, s, error));
  EXPECT_NE(error.find("claims-200.xc.tmp"), std::string::npos) << error;
  ClaimsFile again;
  ASSERT_TRUE(again.open(path("claims-200.xc"), true, error)) << error;
  EXPECT_EQ(again.stats().claims, 100u);
}

}  // namespace merging
