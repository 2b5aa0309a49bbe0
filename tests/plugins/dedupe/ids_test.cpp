// Id extraction: key, header, JSON pointer; record errors; UUID compaction.
#include <rocksdb/db.h>

#include "dedupe_fixture.hpp"

#include "claims_file.hpp"

namespace dedupe_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

OwnedRecord raw(std::optional<std::string> key, std::string value, int64_t offset) {
  return exactly::testing::rec(std::move(key), std::move(value), 0, offset);
}

TEST_F(DedupeTest, JsonIdErrorsAreRecordErrorsNotPasses) {
  auto& t = start({{"id.max.bytes", "40"}});
  auto out = t.process({
      raw(std::nullopt, "{\"other\":1}", 0),                          // missing
      raw(std::nullopt, "{\"messageId\":\"\"}", 1),                   // empty
      raw(std::nullopt, "{\"messageId\":\"" + std::string(41, 'x') + "\"}", 2),  // too long
      raw(std::nullopt, "hello, not json", 3),                        // not JSON
      raw(std::nullopt, "", 4),                                       // empty value
      raw(std::nullopt, "{\"messageId\":{\"a\":1}}", 5),              // not a scalar
      raw(std::nullopt, "{\"messageId\":null}", 6),                   // null = missing
      raw(std::nullopt, "{\"messageId\":\"" + std::string(40, 'y') + "\"}", 7),  // fits
      raw(std::nullopt, "42", 8),                                     // JSON, not a container
  });
  EXPECT_THAT(out.kept, ElementsAre(7u));
  ASSERT_EQ(out.rejected.size(), 8u);
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(out.rejected[i].first, i);
  EXPECT_EQ(out.rejected[7].first, 8u);
  // A number is "not a JSON object or array" (it said "Invalid JSON pointer syntax",
  // about a pointer that is fine); text that is no JSON is "not valid JSON".
  EXPECT_THAT(out.rejected[3].second, HasSubstr("not valid JSON"));
  EXPECT_THAT(out.rejected[7].second, HasSubstr("not a JSON object or array, so /messageId cannot be looked up"));
  EXPECT_THAT(out.rejected[0].second, HasSubstr("missing id"));
  EXPECT_THAT(out.rejected[1].second, HasSubstr("empty id"));
  EXPECT_THAT(out.rejected[2].second, HasSubstr("id.max.bytes=40"));
  EXPECT_THAT(out.rejected[4].second, HasSubstr("not JSON"));
  EXPECT_THAT(out.rejected[5].second, HasSubstr("not a string or a number"));
  EXPECT_THAT(out.rejected[6].second, HasSubstr("missing id"));
  EXPECT_EQ(metric("dedupe_id_errors_total"), 8);
}

TEST_F(DedupeTest, JsonNumbersAndNestedPointersWork) {
  auto& t = start({{"id.json", "/meta/id"}});
  auto out = t.process({raw(std::nullopt, "{\"meta\":{\"id\":12345}}", 0),
                        raw(std::nullopt, "{\"meta\":{\"id\":\"12345\"}}", 1),
                        raw(std::nullopt, "{\"meta\": {\"id\" : 12345 } }", 2),
                        raw(std::nullopt, "{\"meta\":{\"id\":\"a\\\"b\"}}", 3),
                        raw(std::nullopt, "{\"meta\":{\"id\":\"a\\u0022b\"}}", 4)});
  // The number's text and the string "12345" are the same id; escapes are decoded.
  EXPECT_THAT(out.kept, ElementsAre(0u, 3u));
  EXPECT_THAT(out.rejected, IsEmpty());
}

// What JSON has no number for is a record error, not an id: simdjson types a value by its
// first byte, and "0123" or "1x2" were taken as ids (matching the strings "0123", ...).
TEST_F(DedupeTest, AJsonIdThatIsNoJsonNumberIsARecordError) {
  auto& t = start({{"id.json", "/id"}});
  const std::vector<std::string> bad = {"0123", "-", "1.", "1x2", "--5", "1.2.3", "1e", "-01"};
  const std::vector<std::string> good = {"0", "-0", "12", "-3.25", "1e5", "2E-3", "0.5e+10"};
  std::vector<OwnedRecord> in;
  int64_t off = 0;
  for (const auto& n : bad) in.push_back(raw(std::nullopt, "{\"id\":" + n + "}", off++));
  for (const auto& n : good) in.push_back(raw(std::nullopt, "{\"id\":" + n + "}", off++));
  auto out = t.process(in);
  ASSERT_EQ(out.rejected.size(), bad.size());
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(out.rejected[i].first, i);
    EXPECT_THAT(out.rejected[i].second, HasSubstr("is not a valid JSON number ('" + bad[i] + "')"));
  }
  EXPECT_EQ(out.kept.size(), good.size());
}

TEST_F(DedupeTest, IdFromTheRecordKey) {
  auto& k = start({{"id.key", "true"}});
  auto out = k.process({raw("k1", "a", 0), raw("k1", "b", 1), raw(std::nullopt, "c", 2),
                        raw("", "d", 3), raw("k2", "e", 4)});
  EXPECT_THAT(out.kept, ElementsAre(0u, 4u));
  ASSERT_EQ(out.rejected.size(), 2u);
  EXPECT_THAT(out.rejected[0].second, HasSubstr("no key"));
  EXPECT_THAT(out.rejected[1].second, HasSubstr("empty id"));
}

TEST_F(DedupeTest, IdFromAHeader) {
  auto& h = start({{"id.header", "message-id"}});
  auto with = [](std::string id, int64_t off) {
    auto r = raw(std::nullopt, "v", off);
    r.headers = {{"other", "zzz"}, {"message-id", std::move(id)}};
    return r;
  };
  auto out = h.process({with("m1", 0), with("m1", 1), raw(std::nullopt, "v", 2), with("m2", 3)});
  EXPECT_THAT(out.kept, ElementsAre(0u, 3u));
  ASSERT_EQ(out.rejected.size(), 1u);
  EXPECT_THAT(out.rejected[0].second, HasSubstr("no header 'message-id'"));
}

TEST_F(DedupeTest, UuidTextIsStoredAs16Bytes) {
  auto& t = start();
  std::mt19937_64 rng(3);
  std::vector<OwnedRecord> batch;
  std::set<std::string> ids;
  for (int i = 0; i < 500; ++i) {
    std::string u = uuid(rng);
    ids.insert(u);
    batch.push_back(event(u, i));
  }
  // Same UUIDs in upper case are the same ids.
  std::vector<OwnedRecord> upper;
  for (int i = 0; i < 10; ++i) {
    std::string u = batch[i].value.substr(14, 36);
    std::transform(u.begin(), u.end(), u.begin(), ::toupper);
    upper.push_back(event(u, 500 + i));
  }
  // Not canonical (no hyphens, 32 chars; or 36 chars that are not hex): stored as is.
  batch.push_back(event("0123456789abcdef0123456789abcdef", 510));
  batch.push_back(event("0123456g-89ab-cdef-0123-456789abcdef", 511));
  t.process(batch);
  EXPECT_THAT(t.process(upper).kept, IsEmpty());
  commit_round();
  EXPECT_EQ(metric("dedupe_claimed_key_bytes_total"), 500 * 16 + 33 + 37);
  stage_.reset();  // closes the store

  // What is on disk: 16-byte keys for the UUIDs.
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, {}}, {"seq", {}}};
  std::vector<rocksdb::ColumnFamilyHandle*> h;
  auto st = rocksdb::DB::OpenForReadOnly({}, (dir_ / "events-0").string(), cfs, &h, &db);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::map<size_t, int> sizes;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator({}, h[0]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    sizes[it->key().size()]++;
    EXPECT_LE(it->value().size(), 3u + 3u + 8u);
  }
  it.reset();
  for (auto* x : h) db->DestroyColumnFamilyHandle(x);
  delete db;
  // And the store's own claims files (claims.format own, the default).
  for (auto& e : fs::directory_iterator(dir_ / "events-0")) {
    if (e.path().extension() != ".xc") continue;
    exactly::dedupe::ClaimsFile f;
    std::string error;
    ASSERT_TRUE(f.open(e.path().string(), true, error)) << error;
    EXPECT_LE(f.stats().value_width, 3u + 3u + 8u);
    f.for_each([&](std::string_view k, const exactly::dedupe::ClaimValue&) {
      sizes[k.size()]++;
      return true;
    });
  }
  EXPECT_EQ(sizes[16], 500);
  EXPECT_EQ(sizes[33], 1);
  EXPECT_EQ(sizes[37], 1);
  EXPECT_EQ(sizes.size(), 3u);
}

TEST_F(DedupeTest, ARaw16ByteIdNeverCollidesWithAUuid) {
  auto& k = start({{"id.key", "true"}});
  std::string u = "00112233-4455-6677-8899-aabbccddeeff";
  std::string bin("\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff", 16);
  EXPECT_THAT(k.process({raw(u, "a", 0), raw(bin, "b", 1), raw(bin, "c", 2)}).kept,
              ElementsAre(0u, 1u));
}

TEST_F(DedupeTest, ExactlyOneIdSourceMustBeSet) {
  stage_.reset();
  TransformHarness none(library(), "dedupe", {{"state.dir", dir_.string()}}, &host_);
  EXPECT_EQ(none.create_status().code(), EX_ERR_CONFIG);
  EXPECT_EQ(none.create_status().key(), "id");
  TransformHarness two(library(), "dedupe",
                       {{"state.dir", dir_.string()}, {"id.header", "h"}, {"id.json", "/x"}},
                       &host_);
  EXPECT_EQ(two.create_status().code(), EX_ERR_CONFIG);
  EXPECT_EQ(two.create_status().key(), "id.json");
  TransformHarness bad(library(), "dedupe", {{"state.dir", dir_.string()}, {"id.json", "x"}},
                       &host_);
  EXPECT_EQ(bad.create_status().code(), EX_ERR_CONFIG);
  EXPECT_EQ(bad.create_status().key(), "id.json");
  // Pointers no record can satisfy: refused at validate, not met by every record.
  for (const char* p : {"", "/a~2b", "/a/~"}) {
    TransformHarness h(library(), "dedupe", {{"state.dir", dir_.string()}, {"id.json", p}}, &host_);
    EXPECT_EQ(h.create_status().code(), EX_ERR_CONFIG) << "'" << p << "'";
    EXPECT_EQ(h.create_status().key(), "id.json") << "'" << p << "'";
  }
  TransformHarness nodir(library(), "dedupe", {{"id.key", "true"}}, &host_);
  EXPECT_EQ(nodir.create_status().code(), EX_ERR_CONFIG);
  EXPECT_EQ(nodir.create_status().key(), "state.dir");
  TransformHarness fp(library(), "dedupe",
                      {{"id.key", "true"}, {"state.dir", dir_.string()}, {"fingerprint.bytes", "3"}},
                      &host_);
  EXPECT_EQ(fp.create_status().key(), "fingerprint.bytes");
  // A merge needs two files at least.
  TransformHarness one_file(library(), "dedupe",
                            {{"id.key", "true"}, {"state.dir", dir_.string()}, {"claims.files.max", "1"}},
                            &host_);
  EXPECT_EQ(one_file.create_status().code(), EX_ERR_CONFIG);
  EXPECT_EQ(one_file.create_status().key(), "claims.files.max");
  EXPECT_NE(one_file.create_status().message().find("between 2 and"), std::string::npos)
      << one_file.create_status().message();
}

}  // namespace
}  // namespace dedupe_test
