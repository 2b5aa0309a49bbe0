// The file source through its real .so: offsets, partial lines, follow mode, resume.
#include <gtest/gtest.h>

#include "file_test_util.hpp"

#include <sys/stat.h>

#include <cstdio>

namespace {

using exactly::sdk::Checkpoint;
using exactly::sdk::Status;
using exactly::testing::FakeHost;
using exactly::testing::OwnedRecord;
using exactly::testing::SourceHarness;
using file_test::lib;
using file_test::spit;
using file_test::TempDir;
using file_test::values;

// A position's offset: positions are "OFFSET:FINGERPRINT" (the bytes before the offset).
std::string offset_of(const std::string& position) { return position.substr(0, position.find(':')); }

std::vector<OwnedRecord> drain(SourceHarness& s, bool* saw_eoi = nullptr, int max_polls = 1000) {
  std::vector<OwnedRecord> all;
  bool eoi = false;
  for (int i = 0; i < max_polls && !eoi; ++i) {
    Status st;
    auto b = s.poll(0, &eoi, &st);
    EXPECT_TRUE(st.is_ok()) << st.message();
    all.insert(all.end(), b.begin(), b.end());
  }
  if (saw_eoi) *saw_eoi = eoi;
  return all;
}

TEST(FileSource, LinesOffsetsAndPartition) {
  TempDir dir;
  std::string path = dir.file("events.jsonl");
  spit(path, "{\"a\":1}\n\n{\"b\":22}\nlast\n");
  FakeHost host;
  SourceHarness s(lib(), "file", {{"path", path}}, &host);
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  ASSERT_TRUE(s.open().is_ok());
  bool eoi = false;
  auto recs = drain(s, &eoi);
  EXPECT_TRUE(eoi);
  ASSERT_EQ(values(recs), (std::vector<std::string>{"{\"a\":1}", "", "{\"b\":22}", "last"}));
  std::vector<int64_t> offsets;
  for (auto& r : recs) {
    offsets.push_back(r.offset);
    EXPECT_FALSE(r.key.has_value());
    EXPECT_EQ(r.partition, 0);
  }
  // Each line's last byte (its '\n'): the host takes offset + 1 as the position after a
  // record, which must be where the source resumes (the checkpoint below).
  EXPECT_EQ(offsets, (std::vector<int64_t>{7, 8, 17, 22}));
  ASSERT_EQ(host.assigned.size(), 1u);
  EXPECT_EQ(host.assigned[0].name, "file:events.jsonl");
  EXPECT_EQ(host.assigned[0].start_offset, 0);
  Checkpoint cp = s.checkpoint();
  EXPECT_EQ(cp.format, "file.v1");
  EXPECT_EQ(offset_of(cp.data), "23");
}

TEST(FileSource, BatchSizeAndCheckpointAfterEachBatch) {
  TempDir dir;
  std::string path = dir.file("in.jsonl");
  std::string content;
  for (int i = 0; i < 10; ++i) content += "line" + std::to_string(i) + "\n";  // 6 bytes each
  spit(path, content);
  SourceHarness s(lib(), "file", {{"path", path}, {"batch.size", "4"}});
  ASSERT_TRUE(s.open().is_ok());
  std::vector<size_t> sizes;
  std::vector<std::string> cps;
  bool eoi = false;
  while (!eoi) {
    auto b = s.poll(0, &eoi);
    if (!b.empty()) {
      sizes.push_back(b.size());
      cps.push_back(offset_of(s.checkpoint().data));
    }
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{4, 4, 2}));
  EXPECT_EQ(cps, (std::vector<std::string>{"24", "48", "60"}));
}

TEST(FileSource, PartialLastLineEmittedAtEofWithoutFollow) {
  TempDir dir;
  std::string path = dir.file("in.jsonl");
  spit(path, "one\ntwo");
  SourceHarness s(lib(), "file", {{"path", path}});
  ASSERT_TRUE(s.open().is_ok());
  bool eoi = false;
  auto recs = drain(s, &eoi);
  EXPECT_TRUE(eoi);
  EXPECT_EQ(values(recs), (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(recs[1].offset, 6);  // its last byte: the file ends without '\n'
  EXPECT_EQ(offset_of(s.checkpoint().data), "7");
}

TEST(FileSource, FollowHoldsPartialLineUntilCompleted) {
  TempDir dir;
  std::string path = dir.file("in.jsonl");
  spit(path, "one\ntw");
  SourceHarness s(lib(), "file", {{"path", path}, {"follow", "true"}});
  ASSERT_TRUE(s.open().is_ok());
  bool eoi = true;
  auto first = s.poll(0, &eoi);
  EXPECT_FALSE(eoi);
  EXPECT_EQ(values(first), (std::vector<std::string>{"one"}));
  EXPECT_TRUE(s.poll(10, &eoi).empty());
  EXPECT_FALSE(eoi);
  EXPECT_EQ(offset_of(s.checkpoint().data), "4");
  spit(path, "o\nthree\nfou", true);
  auto second = s.poll(0, &eoi);
  EXPECT_FALSE(eoi);
  ASSERT_EQ(values(second), (std::vector<std::string>{"two", "three"}));
  EXPECT_EQ(second[0].offset, 7);
  EXPECT_EQ(second[1].offset, 13);
  EXPECT_EQ(offset_of(s.checkpoint().data), "14");
  EXPECT_TRUE(s.poll(0, &eoi).empty());
  spit(path, "r\n", true);
  auto third = s.poll(0, &eoi);
  ASSERT_EQ(values(third), (std::vector<std::string>{"four"}));
  EXPECT_EQ(third[0].offset, 18);
}

TEST(FileSource, ResumeAndRewindReplayFromByteOffset) {
  TempDir dir;
  std::string path = dir.file("in.jsonl");
  std::string content;
  for (int i = 0; i < 100; ++i) content += "{\"n\":" + std::to_string(i) + "}\n";
  spit(path, content);
  SourceHarness s(lib(), "file", {{"path", path}, {"batch.size", "30"}});
  ASSERT_TRUE(s.open().is_ok());
  auto head = s.poll(0);
  ASSERT_EQ(head.size(), 30u);
  Checkpoint cp = s.checkpoint();
  auto rest = drain(s);
  ASSERT_EQ(rest.size(), 70u);
  EXPECT_EQ(rest.front().value, "{\"n\":30}");
  EXPECT_EQ(std::to_string(head.back().offset + 1), offset_of(cp.data));

  ASSERT_TRUE(s.rewind(cp).is_ok());
  auto replay = drain(s);
  EXPECT_EQ(values(replay), values(rest));

  FakeHost host;
  SourceHarness resumed(lib(), "file", {{"path", path}}, &host);
  ASSERT_TRUE(resumed.open(cp).is_ok());
  auto again = drain(resumed);
  EXPECT_EQ(values(again), values(rest));
  ASSERT_EQ(host.assigned.size(), 1u);
  EXPECT_EQ(std::to_string(host.assigned[0].start_offset), offset_of(cp.data));
}

TEST(FileSource, LineLongerThanTheReadBuffer) {
  TempDir dir;
  std::string path = dir.file("in.jsonl");
  std::string big(3 * 1024 * 1024 + 17, 'x');
  spit(path, "a\n" + big + "\nb\n");
  SourceHarness s(lib(), "file", {{"path", path}});
  ASSERT_TRUE(s.open().is_ok());
  auto recs = drain(s);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[1].value, big);
  EXPECT_EQ(recs[2].value, "b");
  EXPECT_EQ(recs[1].offset, static_cast<int64_t>(2 + big.size()));
  EXPECT_EQ(recs[2].offset, static_cast<int64_t>(2 + big.size() + 2));
}

// A line is searched for its '\n' once as its bytes arrive (the search resumes where it
// stopped, across polls and the buffer's compaction), so a line written a little at a
// time comes out whole and at the right offset.
TEST(FileSource, FollowAssemblesALineWrittenInManyPieces) {
  TempDir dir;
  std::string path = dir.file("in.jsonl");
  spit(path, "first\n");
  SourceHarness s(lib(), "file", {{"path", path}, {"follow", "true"}, {"batch.size", "1"}});
  ASSERT_TRUE(s.open().is_ok());
  EXPECT_EQ(values(s.poll(0)), (std::vector<std::string>{"first"}));
  std::string line;
  for (int i = 0; i < 300; ++i) {
    std::string piece(997, static_cast<char>('a' + i % 26));
    line += piece;
    spit(path, piece, true);
    EXPECT_TRUE(s.poll(0).empty()) << "a partial line came out at piece " << i;
  }
  spit(path, "\nlast\n", true);
  auto whole = s.poll(0);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_TRUE(whole[0].value == line) << whole[0].value.size() << " bytes, expected " << line.size();
  EXPECT_EQ(whole[0].offset, static_cast<int64_t>(6 + line.size()));
  auto last = s.poll(0);
  ASSERT_EQ(values(last), (std::vector<std::string>{"last"}));
  EXPECT_EQ(last[0].offset, static_cast<int64_t>(6 + line.size() + 5));
}

// A line longer than max.line.bytes stops the pipeline for good (a config-class error
// naming the key and the line's byte offset) instead of the buffer growing until the
// host runs out of memory; a line of exactly max.line.bytes is fine.
TEST(FileSource, ALineOverMaxLineBytesStopsWithItsOffset) {
  TempDir dir;
  std::string path = dir.file("in.jsonl");
  spit(path, "ok\n" + std::string(1000, 'x') + "\n" + std::string(1001, 'y') + "\nafter\n");
  SourceHarness s(lib(), "file", {{"path", path}, {"max.line.bytes", "1000"}});
  ASSERT_TRUE(s.open().is_ok());
  Status st;
  bool eoi = false;
  auto before = s.poll(0, &eoi, &st);
  EXPECT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(before[0].value, "ok");
  EXPECT_EQ(before[1].value, std::string(1000, 'x'));
  EXPECT_TRUE(s.poll(0, &eoi, &st).empty());
  EXPECT_EQ(st.code(), EX_ERR_CONFIG);
  EXPECT_EQ(st.key(), "max.line.bytes");
  EXPECT_NE(st.message().find("byte offset 1004 of " + path), std::string::npos) << st.message();

  // Following, the line need not be complete: its first max.line.bytes + 1 bytes suffice.
  std::string tail = dir.file("tail.jsonl");
  spit(tail, "ok\n" + std::string(5000, 'z'));
  SourceHarness f(lib(), "file", {{"path", tail}, {"follow", "true"}, {"max.line.bytes", "1000"}});
  ASSERT_TRUE(f.open().is_ok());
  // The lines before it come out first, in a poll that succeeds.
  EXPECT_EQ(values(f.poll(0, &eoi, &st)), (std::vector<std::string>{"ok"}));
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_TRUE(f.poll(0, &eoi, &st).empty());
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_NE(st.message().find("byte offset 3 of"), std::string::npos) << st.message();

  SourceHarness bad(lib(), "file", {{"path", path}, {"max.line.bytes", "0"}});
  EXPECT_EQ(bad.create_status().key(), "max.line.bytes");
}

TEST(FileSource, OwnOffsetsFileWhenTheSinkKeepsNoPositions) {
  TempDir dir;
  std::string path = dir.file("in.jsonl");
  std::string offsets = dir.file("in.offset");
  spit(path, "a\nb\nc\nd\n");
  {
    SourceHarness s(lib(), "file", {{"path", path}, {"batch.size", "2"}, {"offsets.path", offsets}});
    ASSERT_TRUE(s.open().is_ok());
    ASSERT_EQ(s.poll(0).size(), 2u);
    ASSERT_TRUE(s.commit(s.checkpoint()).is_ok());
    ASSERT_EQ(s.poll(0).size(), 2u);  // read but never committed
  }
  SourceHarness s(lib(), "file", {{"path", path}, {"offsets.path", offsets}});
  ASSERT_TRUE(s.open().is_ok());
  EXPECT_EQ(values(drain(s)), (std::vector<std::string>{"c", "d"}));
}

// Two sources on one offsets.path each resumed from the other's position and skipped
// the lines the other had read; the second is refused while the first lives, and a
// source rebuilt after the first is gone takes the file over.
TEST(FileSource, ASecondSourceOnTheSameOffsetsPathIsRefusedWhileTheFirstHoldsIt) {
  TempDir dir;
  std::string a = dir.file("a.jsonl"), b = dir.file("b.jsonl"), offsets = dir.file("shared.offset");
  spit(a, "a1\na2\n");
  spit(b, "b1\n");
  {
    SourceHarness first(lib(), "file", {{"path", a}, {"offsets.path", offsets}});
    ASSERT_TRUE(first.open().is_ok());
    SourceHarness second(lib(), "file", {{"path", b}, {"offsets.path", offsets}});
    Status st = second.open();
    EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
    EXPECT_EQ(st.key(), "offsets.path");
    EXPECT_NE(st.message().find(offsets + " is in use by another file source"), std::string::npos)
        << st.message();
    // The first one's commits go on (the lock sits beside the file it replaces).
    ASSERT_EQ(first.poll(0).size(), 2u);
    EXPECT_TRUE(first.commit(first.checkpoint()).is_ok());
  }
  SourceHarness after(lib(), "file", {{"path", a}, {"offsets.path", offsets}});
  EXPECT_TRUE(after.open().is_ok());
}

TEST(FileSource, ErrorsNameTheProblem) {
  TempDir dir;
  SourceHarness missing(lib(), "file", {{"path", dir.file("nope.jsonl")}});
  ASSERT_TRUE(missing.ok());
  Status st = missing.open();
  EXPECT_EQ(st.code(), EX_ERR_CONFIG);
  EXPECT_EQ(st.key(), "path");

  std::string path = dir.file("in.jsonl");
  spit(path, "abc\n");
  SourceHarness s(lib(), "file", {{"path", path}});
  EXPECT_EQ(s.open(Checkpoint{"generator.v1", "4"}).code(), EX_ERR_CONFIG);
  st = s.open(Checkpoint{"file.v1", "99"});
  // A config error: a restart cannot change it (it was fatal, and restarted for ever).
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_NE(st.message().find("past the end"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("to read it from its start"), std::string::npos) << st.message();
  EXPECT_FALSE(s.open(Checkpoint{"file.v1", "2:zz"}).is_ok());
  EXPECT_FALSE(s.open(Checkpoint{"file.v1", "x1"}).is_ok());

  SourceHarness nopath(lib(), "file", {});
  EXPECT_EQ(nopath.create_status().key(), "path");

  // A directory opened fine and failed at every read, retried for ever.
  SourceHarness directory(lib(), "file", {{"path", dir.file("")}});
  st = directory.open();
  EXPECT_EQ(st.code(), EX_ERR_CONFIG);
  EXPECT_EQ(st.key(), "path");
  EXPECT_NE(st.message().find("is a directory"), std::string::npos) << st.message();
}

// A position belongs to the bytes read before it: a file replaced (or rewritten) under a
// stored position is refused, where it resumed mid-way into the new file, skipping its
// first lines and handing out the torn end of one as a record.
TEST(FileSource, AStoredPositionInAReplacedFileIsRefusedNotResumedMidLine) {
  TempDir dir;
  std::string path = dir.file("in.jsonl");
  std::string old_lines, new_lines;
  for (int i = 0; i < 10; ++i) old_lines += "{\"old\":" + std::to_string(i) + "}\n";
  for (int i = 0; i < 10; ++i) new_lines += "{\"new\":" + std::to_string(i) + ",\"pad\":\"xxxxxxx\"}\n";
  spit(path, old_lines);
  Checkpoint end;
  {
    SourceHarness s(lib(), "file", {{"path", path}});
    ASSERT_TRUE(s.open().is_ok());
    ASSERT_EQ(drain(s).size(), 10u);
    end = s.checkpoint();
  }
  ASSERT_EQ(offset_of(end.data), std::to_string(old_lines.size()));
  {
    // The same file grown: the position still belongs to it.
    spit(path, "{\"old\":10}\n", true);
    SourceHarness s(lib(), "file", {{"path", path}});
    ASSERT_TRUE(s.open(end).is_ok());
    EXPECT_EQ(values(drain(s)), (std::vector<std::string>{"{\"old\":10}"}));
  }
  spit(path + ".tmp", new_lines);
  ASSERT_EQ(::rename((path + ".tmp").c_str(), path.c_str()), 0);
  SourceHarness s(lib(), "file", {{"path", path}});
  Status st = s.open(end);
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_EQ(st.key(), "path");
  EXPECT_NE(st.message().find("does not belong to " + path), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("replaced or rewritten"), std::string::npos) << st.message();
  // A position stored before fingerprints (digits only) still resumes as it did.
  SourceHarness legacy(lib(), "file", {{"path", path}});
  ASSERT_TRUE(legacy.open(Checkpoint{"file.v1", "0"}).is_ok());
  EXPECT_EQ(drain(legacy).size(), 10u);
}

// While following: a file cut shorter (copytruncate) or another file renamed over the
// path stops the source with a config error, where it read nothing more (the new lines
// were lost or, once the file grew past the old position, torn).
TEST(FileSource, FollowingRefusesAFileCutShorterOrReplaced) {
  TempDir dir;
  std::string path = dir.file("in.jsonl");
  spit(path, "aaaa\nbbbb\n");
  {
    SourceHarness s(lib(), "file", {{"path", path}, {"follow", "true"}});
    ASSERT_TRUE(s.open().is_ok());
    bool eoi = false;
    ASSERT_EQ(s.poll(0, &eoi).size(), 2u);
    spit(path, "c\n");  // truncated and rewritten: 2 bytes where 10 were read
    Status st;
    EXPECT_TRUE(s.poll(0, &eoi, &st).empty());
    EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
    EXPECT_NE(st.message().find("was cut to 2 bytes while followed (10 bytes were read)"), std::string::npos)
        << st.message();
  }
  spit(path, "aaaa\nbbbb\n");
  SourceHarness s(lib(), "file", {{"path", path}, {"follow", "true"}});
  ASSERT_TRUE(s.open().is_ok());
  bool eoi = false;
  ASSERT_EQ(s.poll(0, &eoi).size(), 2u);
  spit(path + ".new", "aaaa\nbbbb\ncccc\n");
  ASSERT_EQ(::rename((path + ".new").c_str(), path.c_str()), 0);
  Status st;
  EXPECT_TRUE(s.poll(0, &eoi, &st).empty());
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_NE(st.message().find("another file was put at " + path), std::string::npos) << st.message();
}

}  // namespace

// A FIFO as the source's path held open() until a writer came: a config error at once.
TEST(FileSource, AFifoIsAConfigErrorWithoutWaitingForAWriter) {
  TempDir dir;
  const std::string fifo = dir.file("in.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  SourceHarness s(lib(), "file", {{"path", fifo}});
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  Status st = s.open();
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_EQ(st.key(), "path");
  EXPECT_NE(st.message().find(fifo + " is a FIFO, not a file of lines"), std::string::npos) << st.message();
}
