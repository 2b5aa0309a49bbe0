// The file sink through its real .so: commit/abort/open truncation and stored positions.
#include <gtest/gtest.h>

#include <filesystem>

#include "file_test_util.hpp"

#include <sys/stat.h>

namespace {

using exactly::sdk::Checkpoint;
using exactly::sdk::Status;
using exactly::testing::OwnedRecord;
using exactly::testing::rec;
using exactly::testing::SinkHarness;
using file_test::lib;
using file_test::recs;
using file_test::with_checksum;
using file_test::slurp;
using file_test::spit;
using file_test::TempDir;

TEST(FileSink, CommitMakesLinesAndPositionsDurable) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  {
    SinkHarness s(lib(), "file", {{"path", out}});
    ASSERT_TRUE(s.ok()) << s.create_status().message();
    std::optional<Checkpoint> stored;
    ASSERT_TRUE(s.open(&stored).is_ok());
    EXPECT_FALSE(stored.has_value());
    EXPECT_TRUE(s.write(recs({"{\"a\":1}", "{\"b\":2}"})).empty());
    ASSERT_TRUE(s.prepare_commit().is_ok());
    bool kept = false;
    ASSERT_TRUE(s.commit(Checkpoint{"file.v1", "123"}, &kept).is_ok());
    EXPECT_TRUE(kept);
    EXPECT_EQ(slurp(out), "{\"a\":1}\n{\"b\":2}\n");
    EXPECT_TRUE(std::filesystem::exists(out + ".commit"));
  }
  SinkHarness s(lib(), "file", {{"path", out}});
  std::optional<Checkpoint> stored;
  ASSERT_TRUE(s.open(&stored).is_ok());
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->format, "file.v1");
  EXPECT_EQ(stored->data, "123");
  EXPECT_EQ(slurp(out), "{\"a\":1}\n{\"b\":2}\n");
}

TEST(FileSink, AbortDropsTheRoundAndLaterRoundsAppend) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  SinkHarness s(lib(), "file", {{"path", out}});
  ASSERT_TRUE(s.open().is_ok());
  s.write(recs({"r1"}));
  ASSERT_TRUE(s.commit(Checkpoint{"t", "1"}).is_ok());
  s.write(recs({"lost-a", "lost-b"}));
  ASSERT_TRUE(s.prepare_commit().is_ok());  // even flushed and synced bytes go
  ASSERT_TRUE(s.abort().is_ok());
  EXPECT_EQ(slurp(out), "r1\n");
  s.write(recs({"r2"}));
  ASSERT_TRUE(s.commit(Checkpoint{"t", "2"}).is_ok());
  EXPECT_EQ(slurp(out), "r1\nr2\n");
}

TEST(FileSink, BigUncommittedRoundIsCutOffOnAbortAndOnReopen) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  std::string line(4000, 'z');
  std::vector<OwnedRecord> big;
  for (int i = 0; i < 600; ++i) big.push_back(rec(std::nullopt, line, 0, i));  // > 2 MiB
  {
    SinkHarness s(lib(), "file", {{"path", out}});
    ASSERT_TRUE(s.open().is_ok());
    s.write(recs({"kept"}));
    ASSERT_TRUE(s.commit(Checkpoint{"t", "a"}).is_ok());
    s.write(big);
    EXPECT_GT(std::filesystem::file_size(out), 1u << 20) << "round should reach the file early";
    ASSERT_TRUE(s.abort().is_ok());
    EXPECT_EQ(slurp(out), "kept\n");
    s.write(big);  // then the instance dies without committing
  }
  EXPECT_GT(std::filesystem::file_size(out), 1u << 20);
  SinkHarness s(lib(), "file", {{"path", out}});
  std::optional<Checkpoint> stored;
  ASSERT_TRUE(s.open(&stored).is_ok());
  EXPECT_EQ(slurp(out), "kept\n");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->data, "a");
}

TEST(FileSink, TornTailFromACrashIsCutOff) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  {
    SinkHarness s(lib(), "file", {{"path", out}});
    ASSERT_TRUE(s.open().is_ok());
    s.write(recs({"one", "two"}));
    ASSERT_TRUE(s.commit(Checkpoint{"t", "2"}).is_ok());
  }
  spit(out, "thr", true);  // what a kill in the middle of write() leaves
  SinkHarness s(lib(), "file", {{"path", out}});
  ASSERT_TRUE(s.open().is_ok());
  EXPECT_EQ(slurp(out), "one\ntwo\n");
  s.write(recs({"three"}));
  ASSERT_TRUE(s.commit(Checkpoint{"t", "3"}).is_ok());
  EXPECT_EQ(slurp(out), "one\ntwo\nthree\n");
}

TEST(FileSink, CommitWithoutPositionsStoresNone) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  {
    SinkHarness s(lib(), "file", {{"path", out}, {"fsync", "false"}});
    ASSERT_TRUE(s.open().is_ok());
    s.write(recs({"a"}));
    ASSERT_TRUE(s.commit(Checkpoint{"t", "1"}).is_ok());
    s.write(recs({"b"}));
    bool kept = true;
    ASSERT_TRUE(s.commit(std::nullopt, &kept).is_ok());
    EXPECT_FALSE(kept);
  }
  SinkHarness s(lib(), "file", {{"path", out}});
  std::optional<Checkpoint> stored{Checkpoint{}};
  ASSERT_TRUE(s.open(&stored).is_ok());
  EXPECT_FALSE(stored.has_value());
  EXPECT_EQ(slurp(out), "a\nb\n");
}

TEST(FileSink, PreexistingContentIsKeptEvenIfWeCrashBeforeTheFirstCommit) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  spit(out, "theirs\n");
  {
    SinkHarness s(lib(), "file", {{"path", out}});
    ASSERT_TRUE(s.open().is_ok());
    s.write(recs({"ours"}));
    ASSERT_TRUE(s.prepare_commit().is_ok());
  }
  EXPECT_EQ(slurp(out), "theirs\nours\n");
  SinkHarness s(lib(), "file", {{"path", out}});
  ASSERT_TRUE(s.open().is_ok());
  EXPECT_EQ(slurp(out), "theirs\n");
}

TEST(FileSink, ValueWithNewlineIsRejectedNotSplit) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  SinkHarness s(lib(), "file", {{"path", out}});
  ASSERT_TRUE(s.open().is_ok());
  auto rejected = s.write(recs({"ok1", "bad\nline", "ok2"}));
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].first, 1u);
  EXPECT_NE(rejected[0].second.find("newline"), std::string::npos);
  ASSERT_TRUE(s.commit(Checkpoint{"t", "1"}).is_ok());
  EXPECT_EQ(slurp(out), "ok1\nok2\n");
}

// format: json writes any record on one line: a value with a newline, bytes that are not
// text, a missing key, its headers (a dead letter's exactly.error says why). With the
// default format such records were refused, and a file dead-letter sink stopped the
// pipeline on exactly the junk it exists to hold (QA).
TEST(FileSink, FormatJsonWritesAnyRecordOnOneLineWithItsHeaders) {
  TempDir dir;
  std::string out = dir.file("dlq.jsonl");
  SinkHarness s(lib(), "file", {{"path", out}, {"format", "json"}});
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  ASSERT_TRUE(s.open().is_ok());
  OwnedRecord multiline = rec("k1", "bad\nline \"quoted\"\t\x01");
  multiline.headers = {{"exactly.error", "value contains a newline"}, {"exactly.origin", "in-0@7"}};
  multiline.timestamp_ms = 1234;
  OwnedRecord binary = rec(std::nullopt, std::string("\xff\x00\x01", 3));
  binary.headers = {{"bin", std::string("\xfe", 1)}};
  EXPECT_TRUE(s.write({multiline, binary, rec("k3", "")}).empty());
  ASSERT_TRUE(s.commit(Checkpoint{"t", "1"}).is_ok());
  EXPECT_EQ(slurp(out),
            "{\"key\":\"k1\",\"value\":\"bad\\nline \\\"quoted\\\"\\t\\u0001\",\"headers\":"
            "[[\"exactly.error\",\"value contains a newline\"],[\"exactly.origin\",\"in-0@7\"]],\"timestamp\":1234}\n"
            "{\"key\":null,\"value\":{\"base64\":\"/wAB\"},\"headers\":[[\"bin\",{\"base64\":\"/g==\"}]],\"timestamp\":null}\n"
            "{\"key\":\"k3\",\"value\":\"\",\"headers\":[],\"timestamp\":null}\n");
}

TEST(FileSink, AnUnknownFormatIsRefusedByName) {
  TempDir dir;
  SinkHarness s(lib(), "file", {{"path", dir.file("x")}, {"format", "csv"}});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.create_status().message().find("csv"), std::string::npos) << s.create_status().message();
}

// Two sinks on one file (two pipelines, a dead-letter sink on the main sink's path, two
// hosts) interleaved their lines and replaced each other's commit records; the second
// is now refused while the first holds the file, as a config error that names the key.
TEST(FileSink, ASecondSinkOnTheSameFileIsRefusedWhileTheFirstHoldsIt) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  {
    SinkHarness first(lib(), "file", {{"path", out}});
    ASSERT_TRUE(first.open().is_ok());
    SinkHarness second(lib(), "file", {{"path", out}});
    Status st = second.open();
    EXPECT_EQ(st.code(), EX_ERR_CONFIG);
    EXPECT_NE(st.message().find(out + " is in use by another file sink"), std::string::npos)
        << st.message();
    EXPECT_TRUE(first.write(recs({"mine"})).empty());
    ASSERT_TRUE(first.commit(Checkpoint{"t", "1"}).is_ok());
  }
  SinkHarness later(lib(), "file", {{"path", out}});
  EXPECT_TRUE(later.open().is_ok());
  EXPECT_EQ(slurp(out), "mine\n");
}

TEST(FileSink, RefusesOutputShorterThanCommittedOrDamagedCommitRecord) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  {
    SinkHarness s(lib(), "file", {{"path", out}});
    ASSERT_TRUE(s.open().is_ok());
    s.write(recs({"0123456789"}));
    ASSERT_TRUE(s.commit(Checkpoint{"t", "1"}).is_ok());
  }
  std::string sidecar = slurp(out + ".commit");
  spit(out, "012");
  {
    SinkHarness s(lib(), "file", {{"path", out}});
    Status st = s.open();
    EXPECT_EQ(st.code(), EX_ERR_CONFIG);
    EXPECT_NE(st.message().find("shorter"), std::string::npos) << st.message();
  }
  spit(out, "0123456789\n");
  std::string damaged = sidecar;
  damaged[damaged.find("length ") + 7] = '9';
  spit(out + ".commit", damaged);
  {
    SinkHarness s(lib(), "file", {{"path", out}});
    Status st = s.open();
    EXPECT_EQ(st.code(), EX_ERR_CONFIG);
    EXPECT_NE(st.message().find("damaged"), std::string::npos) << st.message();
  }
  spit(out + ".commit", sidecar);
  SinkHarness s(lib(), "file", {{"path", out}});
  EXPECT_TRUE(s.open().is_ok());
}

// A blob length near 2^64 wrapped the bounds check (at + n + 1), so a record with a
// matching checksum but a nonsense length was accepted and its positions read as
// whatever followed. Found by reading read_blob beside fuzz_state_codecs.
TEST(FileSink, RefusesACommitRecordWhoseBlobLengthWrapsAround) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  std::string body = "exactly.file.commit.v1\nlength 11\npositions 1\nformat 18446744073709551615\n"
                     "data 0\n\n";
  spit(out, "0123456789\n");
  spit(out + ".commit", with_checksum(body));
  SinkHarness s(lib(), "file", {{"path", out}});
  Status st = s.open();
  EXPECT_EQ(st.code(), EX_ERR_CONFIG);
  EXPECT_NE(st.message().find("damaged"), std::string::npos) << st.message();
}

TEST(FileSink, BinaryPositionsRoundTrip) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  std::string blob("a\nb\0c\n\nlength 5\n", 17);
  {
    SinkHarness s(lib(), "file", {{"path", out}});
    ASSERT_TRUE(s.open().is_ok());
    s.write(recs({"x"}));
    ASSERT_TRUE(s.commit(Checkpoint{"kafka.v1", blob}).is_ok());
  }
  SinkHarness s(lib(), "file", {{"path", out}});
  std::optional<Checkpoint> stored;
  ASSERT_TRUE(s.open(&stored).is_ok());
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->format, "kafka.v1");
  EXPECT_EQ(stored->data, blob);
}

TEST(FileSink, WriteBeforeOpenIsAnError) {
  TempDir dir;
  SinkHarness s(lib(), "file", {{"path", dir.file("out.jsonl")}});
  Status st;
  s.write(recs({"a"}), &st);
  EXPECT_FALSE(st.is_ok());
  SinkHarness nopath(lib(), "file", {});
  EXPECT_EQ(nopath.create_status().code(), EX_ERR_CONFIG);
  EXPECT_EQ(nopath.create_status().key(), "path");
}

}  // namespace

// A device or FIFO as the sink's path opened, then failed at truncate, which was retried
// for ever (and a "<path>.commit" appeared beside /dev/null): a config error on `path`,
// nothing created.
TEST(FileSink, APathThatIsNotARegularFileIsAConfigErrorAndCreatesNothing) {
  TempDir dir;
  const std::string fifo = dir.file("out.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (const std::string& path : {std::string("/dev/null"), fifo}) {
    SinkHarness s(lib(), "file", {{"path", path}});
    ASSERT_TRUE(s.ok()) << s.create_status().message();
    Status st = s.open();
    EXPECT_EQ(st.code(), EX_ERR_CONFIG) << path << ": " << st.message();
    EXPECT_EQ(st.key(), "path") << path;
    EXPECT_NE(st.message().find(path + " is a"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("not a regular file"), std::string::npos) << st.message();
  }
  EXPECT_FALSE(std::filesystem::exists("/dev/null.commit"));
  EXPECT_FALSE(std::filesystem::exists(fifo + ".commit"));
}
