// file->file and generator->file driven the way the host drives a pipeline, with
// aborted rounds and instance restarts injected at random: the sink's stored positions
// must make the output exactly the input, once.
#include <gtest/gtest.h>

#include <random>

#include "file_test_util.hpp"

namespace {

using exactly::sdk::Checkpoint;
using exactly::testing::Library;
using exactly::testing::OwnedRecord;
using exactly::testing::Pairs;
using exactly::testing::SinkHarness;
using exactly::testing::SourceHarness;
using file_test::lib;
using file_test::slurp;
using file_test::spit;
using file_test::TempDir;

const Library& generator_lib() {
  static Library l(std::string(EXACTLY_PLUGIN_DIR) + "/exactly_generator.so");
  return l;
}

struct Faults {
  int commits = 0, aborts = 0, restarts = 0;
};

// Runs source -> file sink until the source ends, aborting rounds and dropping whole
// instances (uncommitted output included) at random.
Faults run(const Library& source_lib, const Pairs& source_cfg, const std::string& out,
           unsigned seed) {
  std::mt19937 rng(seed);
  Faults f;
  for (int life = 0; life < 10000; ++life) {
    SinkHarness sink(lib(), "file", {{"path", out}, {"fsync", "false"}});
    std::optional<Checkpoint> stored;
    EXPECT_TRUE(sink.open(&stored).is_ok());
    SourceHarness src(source_lib, source_lib.descriptor()->name, source_cfg);
    EXPECT_TRUE(src.open(stored).is_ok());
    Checkpoint last = stored ? *stored : src.checkpoint();
    for (;;) {
      bool eoi = false;
      int polls = 1 + static_cast<int>(rng() % 3);
      for (int p = 0; p < polls && !eoi; ++p) sink.write(src.poll(0, &eoi));
      unsigned action = rng() % 10;
      if (action < 6 || (eoi && action < 9)) {
        Checkpoint cp = src.checkpoint();
        bool kept = false;
        EXPECT_TRUE(sink.prepare_commit().is_ok());
        EXPECT_TRUE(sink.commit(cp, &kept).is_ok());
        EXPECT_TRUE(kept);
        last = cp;
        ++f.commits;
        if (eoi) return f;
      } else if (action < 9) {
        EXPECT_TRUE(sink.abort().is_ok());
        EXPECT_TRUE(src.rewind(last).is_ok());
        ++f.aborts;
      } else {
        ++f.restarts;
        break;
      }
    }
  }
  ADD_FAILURE() << "pipeline never finished";
  return f;
}

TEST(FilePipeline, FileToFileIsExactlyOnceAcrossAbortsAndRestarts) {
  TempDir dir;
  std::string in = dir.file("in.jsonl"), out = dir.file("out.jsonl");
  std::string content;
  for (int i = 0; i < 3000; ++i) content += "{\"id\":" + std::to_string(i) + "}\n";
  spit(in, content);
  Faults f = run(lib(), {{"path", in}, {"batch.size", "50"}}, out, 1);
  EXPECT_GT(f.aborts, 0);
  EXPECT_GT(f.restarts, 0);
  EXPECT_EQ(slurp(out), content);
}

TEST(FilePipeline, GeneratorToFileIsExactlyOnceAcrossAbortsAndRestarts) {
  TempDir dir;
  std::string out = dir.file("out.jsonl");
  Pairs cfg{{"count", "5000"}, {"partitions", "3"}, {"batch.size", "77"},
            {"duplicate.ratio", "0.02"}};
  SourceHarness reference(generator_lib(), "generator", cfg);
  ASSERT_TRUE(reference.open().is_ok());
  std::string expected;
  bool eoi = false;
  while (!eoi)
    for (auto& r : reference.poll(0, &eoi)) expected += r.value + "\n";
  Faults f = run(generator_lib(), cfg, out, 2);
  EXPECT_GT(f.aborts, 0);
  EXPECT_GT(f.restarts, 0);
  EXPECT_EQ(slurp(out), expected);
}

}  // namespace
