// What the store reads back from disk or from its changelog: the chunk and claim codecs
// refuse what they cannot read, and a store whose unfolded chunk is unreadable refuses to
// open instead of forgetting the ids in it. (tests/fuzz/targets/fuzz_state_codecs.cpp
// runs the same decoders under ASan and UBSan; its crashers/ hold the inputs it found.)
#include "claim_codec.hpp"
#include "dedupe_fixture.hpp"

#include <rocksdb/db.h>

#include <chrono>
#include <thread>

namespace dedupe_test {
namespace {

using namespace exactly::dedupe;
using ::testing::HasSubstr;

struct Decoded {
  uint64_t seq;
  std::string key;
  int64_t offset;
  uint64_t fp;
};

std::vector<Decoded> claims_of(const std::string& chunk, uint64_t first, bool* whole = nullptr) {
  ChunkView c;
  EXPECT_TRUE(parse_chunk(chunk, c));
  std::vector<Decoded> out;
  bool w = for_each_chunk_claim(c, first, [&](uint64_t seq, std::string_view k, int64_t off, uint64_t fp) {
    out.push_back({seq, std::string(k), off, fp});
  });
  if (whole) *whole = w;
  return out;
}

TEST(StateCodecs, AChunkGivesBackItsClaimsWithOffsetsOnEitherSideOfTheSequence) {
  std::string chunk;
  begin_chunk(chunk, 1795850000000, 4);
  append_chunk_claim(chunk, "order-17", 1000, 1003, 0xdeadbeef, 4);
  append_chunk_claim(chunk, std::string("\0\x01\x02", 3), 1001, 990, 0x01020304, 4);
  ChunkView c;
  ASSERT_TRUE(parse_chunk(chunk, c));
  EXPECT_EQ(c.ms, 1795850000000);
  EXPECT_FALSE(c.folded);
  EXPECT_EQ(c.fp_bytes, 4u);
  bool whole = false;
  auto got = claims_of(chunk, 1000, &whole);
  EXPECT_TRUE(whole);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].key, "order-17");
  EXPECT_EQ(got[0].offset, 1003);
  EXPECT_EQ(got[0].fp, 0xdeadbeefu);
  EXPECT_EQ(got[1].seq, 1001u);
  EXPECT_EQ(got[1].key, std::string("\0\x01\x02", 3));
  EXPECT_EQ(got[1].offset, 990);
}

TEST(StateCodecs, AChunkCutShortIsReportedNotHalfRead) {
  std::string chunk;
  begin_chunk(chunk, 5, 4);
  append_chunk_claim(chunk, "order-17", 1000, 1000, 7, 4);
  append_chunk_claim(chunk, "order-18", 1001, 1001, 8, 4);
  bool whole = true;
  auto got = claims_of(chunk.substr(0, chunk.size() - 2), 1000, &whole);
  EXPECT_FALSE(whole);
  EXPECT_EQ(got.size(), 1u);
}

// Found by fuzz_state_codecs: a length byte over 8 made the fingerprint loop shift a
// 64-bit value by 64 or more (undefined). A fingerprint is at most 8 bytes.
TEST(StateCodecs, AChunkWithAFingerprintLongerThan64BitsIsUnreadable) {
  std::string chunk;
  begin_chunk(chunk, 5, 8);
  append_chunk_claim(chunk, "order-17", 1000, 1000, 7, 8);
  ChunkView c;
  EXPECT_TRUE(parse_chunk(chunk, c));
  chunk[1] = 9;  // the fingerprint length, after a one-byte time
  EXPECT_FALSE(parse_chunk(chunk, c));
}

// Found by fuzz_state_codecs: the offset was seq + distance in signed arithmetic, which
// overflows (undefined) for corrupt distances. Now it wraps, as written offsets never do.
TEST(StateCodecs, AClaimsOffsetIsItsSequencePlusItsDistanceInWrappingArithmetic) {
  char buf[kMaxClaimValue];
  ClaimValue v;
  size_t n = encode_claim(buf, 123456, 123460, 0xabcdef01, 4);
  ASSERT_TRUE(decode_claim(std::string_view(buf, n), v));
  EXPECT_EQ(v.seq, 123456u);
  EXPECT_EQ(v.offset, 123460);
  EXPECT_EQ(v.fingerprint, 0xabcdef01u);
  EXPECT_EQ(v.fingerprint_bytes, 4u);
  EXPECT_EQ(offset_from(10, zigzag(-3)), 7);
  EXPECT_EQ(offset_from(UINT64_MAX, zigzag(2)), 1);  // wraps instead of overflowing
  EXPECT_EQ(offset_from(uint64_t{1} << 40, zigzag(INT64_MAX)),
            static_cast<int64_t>((uint64_t{1} << 40) + static_cast<uint64_t>(INT64_MAX)));
}

TEST(StateCodecs, StoreMetaRoundTripsAndRefusesTruncation) {
  StoreMeta m;
  m.next_seq = 5000;
  m.floor = 10;
  m.high_water = 4999;
  m.indexed = 4096;
  m.fresh = false;
  m.position = 5000;
  m.changelog = 77;
  const std::string e = m.encode();
  StoreMeta d;
  ASSERT_TRUE(d.decode(e));
  EXPECT_EQ(d.encode(), e);
  for (size_t n = 0; n < e.size(); ++n) EXPECT_FALSE(StoreMeta().decode(e.substr(0, n))) << n;
}

// A closed store's RocksDB (claims, then the sequence index) for a test to edit.
struct StoreDb {
  explicit StoreDb(const fs::path& store) {
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
        {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
        {"seq", rocksdb::ColumnFamilyOptions()}};
    EXPECT_TRUE(rocksdb::DB::Open(rocksdb::Options(), store.string(), cfs, &h, &db).ok());
  }
  ~StoreDb() {
    for (auto* x : h) db->DestroyColumnFamilyHandle(x);
    delete db;
  }
  rocksdb::ColumnFamilyHandle* seq() const { return h[1]; }
  std::vector<rocksdb::ColumnFamilyHandle*> h;
  rocksdb::DB* db = nullptr;
};

// Adds one round's chunk to a closed store as a round left it when its host died before
// the fold: the chunk under its first claim's sequence number, the meta moved past it and
// past `last_offset`, the round's last input record.
void add_unfolded_chunk(const fs::path& store, const std::string& chunk, uint64_t claims,
                        int64_t last_offset) {
  StoreDb s(store);
  ASSERT_NE(s.db, nullptr);
  std::string raw;
  ASSERT_TRUE(s.db->Get(rocksdb::ReadOptions(), s.seq(), rocksdb::Slice(), &raw).ok());
  StoreMeta m;
  ASSERT_TRUE(m.decode(raw));
  ASSERT_EQ(m.indexed, m.next_seq) << "a closed store has folded every claim";
  const uint64_t first = m.next_seq;
  m.next_seq += claims;
  m.high_water = last_offset;
  m.position = last_offset + 1;
  rocksdb::WriteBatch wb;
  wb.Put(s.seq(), seq_key(first), chunk);
  wb.Put(s.seq(), rocksdb::Slice(), m.encode());
  ASSERT_TRUE(s.db->Write(rocksdb::WriteOptions(), &wb).ok());
}

// Without it the store skipped an unreadable chunk and forgot its ids: their duplicates
// passed. A readable one is replayed (the control).
TEST_F(DedupeTest, AStoreWithAnUnreadableUnfoldedChunkRefusesToOpenAndSaysWhy) {
  auto& t = start();
  int64_t off = 0;
  EXPECT_EQ(t.process(range(0, 100, off)).kept.size(), 100u);
  commit_round();
  stage_.reset();
  const fs::path store = dir_ / "events-0";

  std::string chunk;
  begin_chunk(chunk, 5, 4);
  append_chunk_claim(chunk, "id-7777", 100, off, 7, 4);
  add_unfolded_chunk(store, chunk, 1, off);
  ++off;
  auto& replayed = start({}, {part(0, "events-0", off)});
  EXPECT_THAT(replayed.process({event("id-7777", off++)}).kept, ::testing::IsEmpty());
  EXPECT_EQ(replayed.process({event("id-7778", off++)}).kept.size(), 1u);
  commit_round();
  stage_.reset();

  // The time, a fingerprint length of 4, then a claim whose 5-byte key has 2 bytes.
  add_unfolded_chunk(store, std::string("\x05\x04\x05" "ab", 5), 1, off);
  ++off;
  TransformHarness again(library(), "dedupe", config(), &host_);
  ASSERT_TRUE(again.ok()) << again.create_status().message();
  auto st = again.assign({part(0, "events-0", off)});
  EXPECT_FALSE(st.is_ok());
  EXPECT_THAT(st.message(), HasSubstr("unreadable chunk of claims"));
  EXPECT_THAT(st.message(), HasSubstr(store.string()));
}

// Before, a chunk whose time could not be read counted as older than any age limit, so
// its claims (and all before them) were evicted at once and their duplicates passed.
// Then it counted as written now, for ever, which held back age eviction of every chunk
// after it. It takes the time of the chunk after it: evicted no earlier than that one.
TEST_F(DedupeTest, AChunkWhoseTimeCannotBeReadIsEvictedNoEarlierThanTheChunkAfterIt) {
  Pairs aged = {{"retention.max.age", "300"}};
  auto& t = start(aged);
  int64_t off = 0;
  EXPECT_EQ(t.process({event("old", off++)}).kept.size(), 1u);
  commit_round();
  stage_.reset();  // closed: its claims are folded, its chunk keeps only its time
  {
    StoreDb s(dir_ / "events-0");
    ASSERT_NE(s.db, nullptr);
    std::unique_ptr<rocksdb::Iterator> it(s.db->NewIterator(rocksdb::ReadOptions(), s.seq()));
    it->Seek(seq_key(0));
    ASSERT_TRUE(it->Valid() && it->key().size() == 8);
    const std::string key = it->key().ToString();
    it.reset();
    ASSERT_TRUE(s.db->Put(rocksdb::WriteOptions(), s.seq(), key, std::string("\xff", 1)).ok());
  }
  auto& again = start(aged, {part(0, "events-0", off)});
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_EQ(again.process({event("new", off++)}).kept.size(), 1u);
  commit_round();
  EXPECT_THAT(again.process({event("new", off), event("old", off + 1)}).kept, ::testing::IsEmpty());
  off += 2;
  commit_round();
  // Once the chunk after it is too old, both go: age eviction is not stuck behind it.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_EQ(again.process({event("tick", off++)}).kept.size(), 1u);
  commit_round();
  EXPECT_EQ(again.process({event("new", off), event("old", off + 1)}).kept.size(), 2u);
}

}  // namespace
}  // namespace dedupe_test
