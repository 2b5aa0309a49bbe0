// The file sink under log rotation, through its real .so: a path renamed away between
// rounds (logrotate's default) is followed into a new file, while running and while
// stopped; copytruncate stops the pipeline instead of leaving a hole of zero bytes.
#include <gtest/gtest.h>

#include <filesystem>

#include "file_test_util.hpp"

namespace {

using exactly::sdk::Checkpoint;
using exactly::sdk::Status;
using exactly::testing::SinkHarness;
using file_test::lib;
using file_test::recs;
using file_test::with_checksum;
using file_test::slurp;
using file_test::spit;
using file_test::TempDir;
namespace fs = std::filesystem;


std::optional<Checkpoint> stored_positions(const std::string& out) {
  SinkHarness s(lib(), "file", {{"path", out}});
  std::optional<Checkpoint> stored;
  EXPECT_TRUE(s.open(&stored).is_ok());
  return stored;
}

TEST(FileSinkRotation, APathRenamedAwayBetweenRoundsGoesOnInANewFile) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  SinkHarness s(lib(), "file", {{"path", out}});
  ASSERT_TRUE(s.open().is_ok());
  s.write(recs({"r1", "r2"}));
  ASSERT_TRUE(s.commit(Checkpoint{"t", "2"}).is_ok());
  fs::rename(out, out + ".1");  // logrotate without `create`: nothing at the path
  s.write(recs({"r3"}));
  ASSERT_TRUE(s.commit(Checkpoint{"t", "3"}).is_ok());
  EXPECT_EQ(slurp(out + ".1"), "r1\nr2\n");
  EXPECT_EQ(slurp(out), "r3\n");
  // An aborted round after the rotation is cut from the new file, not the old one.
  s.write(recs({"lost"}));
  ASSERT_TRUE(s.abort().is_ok());
  EXPECT_EQ(slurp(out), "r3\n");
  // logrotate's `create`: an empty file is put at the path right after the rename.
  fs::rename(out, out + ".2");
  spit(out, "");
  s.write(recs({"r4"}));
  ASSERT_TRUE(s.commit(Checkpoint{"t", "4"}).is_ok());
  EXPECT_EQ(slurp(out + ".2"), "r3\n");
  EXPECT_EQ(slurp(out), "r4\n");
  EXPECT_EQ(slurp(out + ".1"), "r1\nr2\n");
}

TEST(FileSinkRotation, ACrashAfterTheRotationCutsTheNewFileBackToItsStart) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  {
    SinkHarness s(lib(), "file", {{"path", out}});
    ASSERT_TRUE(s.open().is_ok());
    s.write(recs({"r1"}));
    ASSERT_TRUE(s.commit(Checkpoint{"t", "1"}).is_ok());
    fs::rename(out, out + ".1");
    s.write(recs({"unfinished"}));
    ASSERT_TRUE(s.prepare_commit().is_ok());  // in the new file, never committed
  }  // the sink goes away without commit or abort: as a crash would leave it
  EXPECT_EQ(slurp(out), "unfinished\n");
  auto stored = stored_positions(out);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->data, "1");
  EXPECT_EQ(slurp(out), "") << "the new file's uncommitted round is cut on open";
  EXPECT_EQ(slurp(out + ".1"), "r1\n");
}

TEST(FileSinkRotation, ARotationWhileStoppedIsFollowedAtTheNextOpen) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  {
    SinkHarness s(lib(), "file", {{"path", out}});
    ASSERT_TRUE(s.open().is_ok());
    s.write(recs({"0123456789"}));
    ASSERT_TRUE(s.commit(Checkpoint{"t", "1"}).is_ok());
  }
  fs::rename(out, out + ".1");
  spit(out, "");  // shorter than the committed length, but another file: no refusal
  SinkHarness s(lib(), "file", {{"path", out}});
  std::optional<Checkpoint> stored;
  Status st = s.open(&stored);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->data, "1");
  s.write(recs({"next"}));
  ASSERT_TRUE(s.commit(Checkpoint{"t", "2"}).is_ok());
  EXPECT_EQ(slurp(out), "next\n");
  EXPECT_EQ(slurp(out + ".1"), "0123456789\n");
}

TEST(FileSinkRotation, CopytruncateStopsThePipelineInsteadOfLeavingAHole) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  SinkHarness s(lib(), "file", {{"path", out}});
  ASSERT_TRUE(s.open().is_ok());
  s.write(recs({"r1", "r2"}));
  ASSERT_TRUE(s.commit(Checkpoint{"t", "2"}).is_ok());
  spit(out, "");  // logrotate copytruncate: the same file, cut to 0 in place
  Status st;
  s.write(recs({"r3"}), &st);
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_EQ(st.key(), "path");
  EXPECT_NE(st.message().find("copytruncate"), std::string::npos) << st.message();
  EXPECT_EQ(slurp(out), "") << "nothing written after the cut (no zero bytes)";
}

TEST(FileSinkRotation, ACommitRecordOfVersion1StillOpens) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  std::string body = "exactly.file.commit.v1\nlength 3\npositions 1\nformat 1\nt\ndata 1\n7\n";
  spit(out, "r1\nuncommitted\n");
  spit(out + ".commit", with_checksum(body));
  SinkHarness s(lib(), "file", {{"path", out}});
  std::optional<Checkpoint> stored;
  Status st = s.open(&stored);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->data, "7");
  EXPECT_EQ(slurp(out), "r1\n");
  s.write(recs({"r2"}));
  ASSERT_TRUE(s.commit(Checkpoint{"t", "8"}).is_ok());
  EXPECT_EQ(slurp(out + ".commit").rfind("exactly.file.commit.v2\n", 0), 0u) << "rewritten as v2";
}

}  // namespace
