// SIGKILL a process that writes and commits rounds through the file sink, at random
// moments, many times. After each kill the output must be exactly the committed rounds:
// no torn line, no repeated line, and nothing the child saw committed may be missing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include "file_test_util.hpp"

namespace {

using exactly::sdk::Checkpoint;
using exactly::testing::OwnedRecord;
using exactly::testing::SinkHarness;
using file_test::lib;
using file_test::slurp;
using file_test::TempDir;

constexpr const char* kFormat = "crash-test.v1";

uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Round r's lines, a pure function of r. Every fourth round is big enough (> 1 MiB)
// to reach the file before its commit, so kills also land on partial rounds on disk.
std::vector<std::string> round_lines(int64_t r) {
  uint64_t h = mix(static_cast<uint64_t>(r));
  bool big = r % 4 == 3;
  size_t n = big ? 250 + h % 100 : 1 + h % 40;
  std::vector<std::string> lines;
  for (size_t i = 0; i < n; ++i) {
    std::string line = "{\"round\":" + std::to_string(r) + ",\"line\":" + std::to_string(i) +
                       ",\"pad\":\"";
    line.append(big ? 4000 + mix(h + i) % 3000 : mix(h + i) % 200, 'a' + static_cast<char>(i % 26));
    line += "\"}";
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string expected_output(int64_t last_round) {
  std::string s;
  for (int64_t r = 0; r <= last_round; ++r)
    for (auto& l : round_lines(r)) s += l + "\n";
  return s;
}

// Where two outputs part, instead of printing megabytes of lines.
std::string first_difference(const std::string& got, const std::string& want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  if (i == got.size() && i == want.size()) return {};
  return "sizes " + std::to_string(got.size()) + " vs expected " + std::to_string(want.size()) +
         ", first difference at byte " + std::to_string(i) + ": got '" + got.substr(i, 60) +
         "', expected '" + want.substr(i, 60) + "'";
}

int64_t committed_round(const std::optional<Checkpoint>& stored) {
  return stored ? std::stoll(stored->data) : -1;
}

// The child: resume after the stored round, write each round in a few batches, commit
// it with its number as the position, report the commit on `ack`. Runs until killed.
[[noreturn]] void child(const std::string& path, int ack) {
  try {
    SinkHarness sink(lib(), "file", {{"path", path}});
    std::optional<Checkpoint> stored;
    if (!sink.open(&stored).is_ok()) _exit(3);
    for (int64_t r = committed_round(stored) + 1;; ++r) {
      auto lines = round_lines(r);
      std::vector<OwnedRecord> batch;
      for (size_t i = 0; i < lines.size(); ++i) {
        batch.push_back(exactly::testing::rec(std::nullopt, lines[i], 0, static_cast<int64_t>(i)));
        if (batch.size() == 60 || i + 1 == lines.size()) {
          sink.write(batch);
          batch.clear();
        }
      }
      if (!sink.prepare_commit().is_ok()) _exit(4);
      if (!sink.commit(Checkpoint{kFormat, std::to_string(r)}).is_ok()) _exit(5);
      if (::write(ack, &r, sizeof(r)) != sizeof(r)) _exit(6);
    }
  } catch (...) {
    _exit(7);
  }
}

TEST(FileSinkCrash, SigkillAtRandomMomentsLeavesExactlyTheCommittedRounds) {
  TempDir dir;
  std::string path = dir.file("out.jsonl");
  lib();  // load before forking so children start writing at once
  std::mt19937 rng(std::random_device{}());
  const int kKills = 16;
  int64_t committed = -1;
  int torn_tails = 0;
  for (int kill_no = 0; kill_no < kKills; ++kill_no) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      child(path, fds[1]);
    }
    ::close(fds[1]);
    std::this_thread::sleep_for(std::chrono::microseconds(2000 + rng() % 150000));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "child ended on its own with status " << status;
    int64_t acked = -1, r = 0;
    while (::read(fds[0], &r, sizeof(r)) == sizeof(r)) acked = r;
    ::close(fds[0]);

    std::string raw = slurp(path);
    SinkHarness sink(lib(), "file", {{"path", path}});
    std::optional<Checkpoint> stored;
    ASSERT_TRUE(sink.open(&stored).is_ok());
    int64_t now = committed_round(stored);
    EXPECT_GE(now, committed) << "a committed round went missing";
    EXPECT_GE(now, acked) << "a commit the child saw succeed was not durable";
    std::string expected = expected_output(now);
    ASSERT_EQ(first_difference(slurp(path), expected), "") << "after kill " << kill_no;
    ASSERT_GE(raw.size(), expected.size());
    EXPECT_EQ(raw.compare(0, expected.size(), expected), 0) << "committed bytes changed on open";
    torn_tails += raw.size() > expected.size();
    committed = now;
  }
  EXPECT_GT(committed, 0) << "children never committed a round";
  std::printf("%d kills, %lld rounds committed, %d kills left an uncommitted tail\n", kKills,
              static_cast<long long>(committed + 1), torn_tails);
}

}  // namespace
