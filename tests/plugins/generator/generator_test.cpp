// The generator plugin through its real .so: determinism across instances, rewinds and
// restarts; partition layout; duplicate share and byte-exact duplicates.
#include <exactly/testing/harness.hpp>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

using exactly::sdk::Checkpoint;
using exactly::testing::Library;
using exactly::testing::OwnedRecord;
using exactly::testing::Pairs;
using exactly::testing::SourceHarness;

const Library& lib() {
  static Library l(std::string(EXACTLY_PLUGIN_DIR) + "/exactly_generator.so");
  return l;
}

// Polls until end of input (or `limit` records) and returns everything.
std::vector<OwnedRecord> drain(SourceHarness& s, size_t limit = SIZE_MAX) {
  std::vector<OwnedRecord> all;
  for (int polls = 0; polls < 100000 && all.size() < limit; ++polls) {
    bool eoi = false;
    exactly::sdk::Status st;
    auto batch = s.poll(0, &eoi, &st);
    EXPECT_TRUE(st.is_ok()) << st.message();
    all.insert(all.end(), batch.begin(), batch.end());
    if (eoi) break;
  }
  return all;
}

// Value of a string or integer member at the top level of a generator value.
std::string field_of(const std::string& json, const std::string& name) {
  std::string tag = "\"" + name + "\":";
  size_t at = json.find(tag);
  if (at == std::string::npos) return {};
  size_t start = at + tag.size();
  if (json[start] == '"') return json.substr(start + 1, json.find('"', start + 1) - start - 1);
  return json.substr(start, json.find_first_not_of("0123456789", start) - start);
}

bool same(const OwnedRecord& a, const OwnedRecord& b) {
  return a.key == b.key && a.value == b.value && a.partition == b.partition &&
         a.offset == b.offset;
}

TEST(Generator, SameSeedSameRecordsAndDifferentSeedDiffers) {
  Pairs cfg{{"count", "5000"}, {"seed", "7"}, {"partitions", "3"}, {"batch.size", "333"}};
  SourceHarness a(lib(), "generator", cfg);
  SourceHarness b(lib(), "generator", cfg);
  Pairs other = cfg;
  other[1].second = "8";
  SourceHarness c(lib(), "generator", other);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.create_status().message();
  ASSERT_TRUE(a.open().is_ok() && b.open().is_ok() && c.open().is_ok());
  auto ra = drain(a), rb = drain(b), rc = drain(c);
  ASSERT_EQ(ra.size(), 5000u);
  ASSERT_EQ(rb.size(), ra.size());
  ASSERT_EQ(rc.size(), ra.size());
  size_t differing = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    EXPECT_TRUE(same(ra[i], rb[i])) << "record " << i;
    differing += ra[i].value != rc[i].value;
  }
  EXPECT_EQ(differing, ra.size());
}

TEST(Generator, ValueShapeAndKeyIsMessageId) {
  SourceHarness s(lib(), "generator", {{"count", "200"}, {"payload.bytes", "150"}});
  ASSERT_TRUE(s.open().is_ok());
  auto recs = drain(s);
  ASSERT_EQ(recs.size(), 200u);
  std::regex whole(
      R"(\{"messageId":"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",)"
      R"("seq":[0-9]+,"payload":"[A-Za-z0-9_-]{150}"\})");
  for (auto& r : recs) {
    EXPECT_TRUE(std::regex_match(r.value, whole)) << r.value;
    ASSERT_TRUE(r.key.has_value());
    EXPECT_EQ(*r.key, field_of(r.value, "messageId"));
  }
  SourceHarness nokey(lib(), "generator", {{"count", "10"}, {"key", "none"}});
  ASSERT_TRUE(nokey.open().is_ok());
  for (auto& r : drain(nokey)) EXPECT_FALSE(r.key.has_value());
}

TEST(Generator, PartitionsAnnouncedAndRecordsRoundRobin) {
  exactly::testing::FakeHost host;
  SourceHarness s(lib(), "generator", {{"count", "1000"}, {"partitions", "4"}}, &host);
  ASSERT_TRUE(s.open().is_ok());
  auto recs = drain(s);
  ASSERT_EQ(recs.size(), 1000u);
  ASSERT_EQ(host.assigned.size(), 4u);
  for (int p = 0; p < 4; ++p) {
    EXPECT_EQ(host.assigned[p].id, p);
    EXPECT_EQ(host.assigned[p].name, "generator-" + std::to_string(p));
    EXPECT_EQ(host.assigned[p].start_offset, 0);
  }
  std::vector<int64_t> next(4, 0);
  for (size_t i = 0; i < recs.size(); ++i) {
    EXPECT_EQ(recs[i].partition, static_cast<int32_t>(i % 4));
    EXPECT_EQ(recs[i].offset, next[recs[i].partition]++);
  }
}

TEST(Generator, EndOfInputOnlyAfterCount) {
  SourceHarness s(lib(), "generator", {{"count", "10"}, {"batch.size", "4"}});
  ASSERT_TRUE(s.open().is_ok());
  size_t total = 0;
  bool eoi = false;
  int polls = 0;
  while (!eoi && polls++ < 100) {
    auto b = s.poll(0, &eoi);
    EXPECT_LE(b.size(), 4u);
    if (!eoi) {
      EXPECT_FALSE(b.empty());
    }
    total += b.size();
  }
  EXPECT_TRUE(eoi);
  EXPECT_EQ(total, 10u);
  EXPECT_TRUE(s.poll(0, &eoi).empty());
  EXPECT_TRUE(eoi);
}

TEST(Generator, UnboundedNeverEnds) {
  SourceHarness s(lib(), "generator", {{"count", "0"}, {"batch.size", "1000"}});
  ASSERT_TRUE(s.open().is_ok());
  for (int i = 0; i < 50; ++i) {
    bool eoi = true;
    EXPECT_EQ(s.poll(0, &eoi).size(), 1000u);
    EXPECT_FALSE(eoi);
  }
}

TEST(Generator, RewindReplaysIdenticalBytes) {
  SourceHarness s(lib(), "generator",
                  {{"count", "10000"}, {"partitions", "2"}, {"batch.size", "500"},
                   {"duplicate.ratio", "0.1"}});
  ASSERT_TRUE(s.open().is_ok());
  drain(s, 1000);
  Checkpoint cp = s.checkpoint();
  EXPECT_EQ(cp.format, "generator.v1");
  EXPECT_EQ(cp.data, "500,500");
  auto first = drain(s, 1500);
  ASSERT_TRUE(s.commit(cp).is_ok());
  ASSERT_TRUE(s.rewind(cp).is_ok());
  auto again = drain(s, 1500);
  ASSERT_EQ(first.size(), again.size());
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(same(first[i], again[i])) << i;
}

TEST(Generator, ResumeFromCheckpointInNewInstance) {
  Pairs cfg{{"count", "3000"}, {"partitions", "3"}, {"seed", "99"}, {"batch.size", "100"}};
  SourceHarness full(lib(), "generator", cfg);
  ASSERT_TRUE(full.open().is_ok());
  auto all = drain(full);
  ASSERT_EQ(all.size(), 3000u);

  SourceHarness first(lib(), "generator", cfg);
  ASSERT_TRUE(first.open().is_ok());
  auto head = drain(first, 1200);
  Checkpoint cp = first.checkpoint();

  exactly::testing::FakeHost host;
  SourceHarness second(lib(), "generator", cfg, &host);
  ASSERT_TRUE(second.open(cp).is_ok());
  auto tail = drain(second);
  ASSERT_EQ(host.assigned.size(), 3u);
  for (auto& p : host.assigned) EXPECT_EQ(p.start_offset, 400);
  ASSERT_EQ(head.size() + tail.size(), all.size());
  for (size_t i = 0; i < head.size(); ++i) EXPECT_TRUE(same(head[i], all[i]));
  for (size_t i = 0; i < tail.size(); ++i) EXPECT_TRUE(same(tail[i], all[head.size() + i]));
}

TEST(Generator, ResumeFromUnevenPositionsStillCoversEverythingOnce) {
  Pairs cfg{{"count", "900"}, {"partitions", "3"}, {"batch.size", "64"}};
  SourceHarness full(lib(), "generator", cfg);
  ASSERT_TRUE(full.open().is_ok());
  std::map<std::pair<int32_t, int64_t>, std::string> expected;
  for (auto& r : drain(full)) expected[{r.partition, r.offset}] = r.value;

  SourceHarness s(lib(), "generator", cfg);
  ASSERT_TRUE(s.open(Checkpoint{"generator.v1", "10,250,0"}).is_ok());
  auto recs = drain(s);
  EXPECT_EQ(recs.size(), 290u + 50u + 300u);
  std::set<std::pair<int32_t, int64_t>> seen;
  for (auto& r : recs) {
    EXPECT_TRUE(seen.insert({r.partition, r.offset}).second);
    EXPECT_EQ(r.value, (expected[{r.partition, r.offset}]));
  }
}

TEST(Generator, DuplicateShareAndExactCopies) {
  const int count = 200000;
  SourceHarness s(lib(), "generator",
                  {{"count", std::to_string(count)}, {"duplicate.ratio", "0.05"},
                   {"partitions", "2"}, {"seed", "3"}});
  ASSERT_TRUE(s.open().is_ok());
  auto recs = drain(s);
  ASSERT_EQ(recs.size(), static_cast<size_t>(count));
  struct First {
    std::string value;
    int32_t partition;
    int64_t offset;
  };
  std::map<std::string, First> first;
  size_t dups = 0, recent = 0, far = 0;
  for (auto& r : recs) {
    std::string id = field_of(r.value, "messageId");
    auto [it, fresh] = first.try_emplace(id, First{r.value, r.partition, r.offset});
    if (fresh) continue;
    ++dups;
    EXPECT_EQ(r.value, it->second.value) << "duplicate differs from its original";
    EXPECT_EQ(r.partition, it->second.partition) << "duplicate left its original's partition";
    int64_t back = r.offset - it->second.offset;
    recent += back <= 100;
    far += back > 1000;
  }
  double share = static_cast<double>(dups) / count;
  EXPECT_GT(share, 0.045);
  EXPECT_LT(share, 0.055);
  EXPECT_GT(recent, dups / 5) << "too few duplicates close to their original";
  EXPECT_GT(far, dups / 5) << "too few duplicates far from their original";

  SourceHarness none(lib(), "generator", {{"count", "20000"}, {"duplicate.ratio", "0"}});
  ASSERT_TRUE(none.open().is_ok());
  std::set<std::string> ids;
  for (auto& r : drain(none)) ids.insert(*r.key);
  EXPECT_EQ(ids.size(), 20000u);
}

TEST(Generator, RateLimitCapsABurst) {
  SourceHarness s(lib(), "generator", {{"count", "0"}, {"rate", "10"}});
  ASSERT_TRUE(s.open().is_ok());
  // At 10 records/s the bucket holds at most one record.
  for (int i = 0; i < 3; ++i) EXPECT_LE(s.poll(0).size(), 1u);
}

TEST(Generator, RejectsBadConfigAndForeignPositions) {
  SourceHarness r(lib(), "generator", {{"duplicate.ratio", "1.5"}});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.create_status().code(), EX_ERR_CONFIG);
  EXPECT_EQ(r.create_status().key(), "duplicate.ratio");
  SourceHarness k(lib(), "generator", {{"key", "value"}});
  EXPECT_EQ(k.create_status().key(), "key");
  SourceHarness p(lib(), "generator", {{"partitions", "0"}});
  EXPECT_EQ(p.create_status().key(), "partitions");

  SourceHarness s(lib(), "generator", {{"partitions", "2"}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.open(Checkpoint{"file.v1", "120"}).code(), EX_ERR_CONFIG);
  auto st = s.open(Checkpoint{"generator.v1", "1,2,3"});
  EXPECT_EQ(st.code(), EX_ERR_CONFIG);
  EXPECT_EQ(st.key(), "partitions");
  EXPECT_FALSE(s.open(Checkpoint{"generator.v1", "1,x"}).is_ok());
  EXPECT_TRUE(s.open(Checkpoint{"generator.v1", "1,2"}).is_ok());
}

}  // namespace
