// `exactly run` writing a file while an operator rotates it by renaming (logrotate's
// default), twice: every generated record is in exactly one of the three files, once,
// and the host counts both rotations.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <regex>
#include <set>
#include <thread>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

TEST(FileRotationRun, OutputRenamedTwiceWhileRunningLosesAndRepeatsNothing) {
  auto dir = temp_dir("file-rotation-run");
  const fs::path out = dir / "out.jsonl";
  write_file(dir / "p.yaml",
             "plugin.path: [" + std::string(EXACTLY_PLUGIN_DIR) + "]\npipelines:\n  - name: t\n"
             "    delivery: exactly_once\n"
             "    commit: { interval: 50ms }\n"
             "    source: { plugin: generator, config: { count: 3000, rate: 1000, batch.size: 20, duplicate.ratio: 0 } }\n"
             "    sink: { plugin: file, config: { path: " + out.string() + " } }\n");
  std::promise<RunResult> done;
  auto result = done.get_future();
  std::thread host([&] { done.set_value(run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir)); });
  auto wait_for_lines = [&](const fs::path& f, size_t n) {
    for (int i = 0; i < 300 && lines_of(read_file(f)).size() < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  };
  wait_for_lines(out, 500);
  fs::rename(out, dir / "out.jsonl.1");
  wait_for_lines(out, 500);
  fs::rename(out, dir / "out.jsonl.2");
  // logrotate's `create`: an empty file, unless the sink has made one there already
  // (O_EXCL: truncating the sink's new file would be copytruncate).
  int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd >= 0) ::close(fd);
  host.join();
  RunResult r = result.get();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  // The generator numbers its records ("seq"), here without its deliberate duplicates.
  std::set<long> seqs;
  size_t total = 0;
  const std::regex seq(R"("seq":(\d+))");
  for (const char* name : {"out.jsonl.1", "out.jsonl.2", "out.jsonl"}) {
    auto lines = lines_of(read_file(dir / name));
    EXPECT_FALSE(lines.empty()) << name << " got nothing: the rotation was not seen";
    total += lines.size();
    for (const auto& l : lines) {
      std::smatch m;
      ASSERT_TRUE(std::regex_search(l, m, seq)) << l;
      seqs.insert(std::stol(m[1]));
    }
  }
  EXPECT_EQ(total, 3000u);
  EXPECT_EQ(seqs.size(), 3000u) << "a record written twice";
  EXPECT_EQ(*seqs.rbegin(), 2999);
  std::smatch m;
  const std::string all = r.out + r.err;
  ASSERT_TRUE(std::regex_search(all, m, std::regex(R"(file_sink_rotations_total\s+(\d+))"))) << all;
  EXPECT_EQ(m[1], "2");
}

}  // namespace
