// `exactly run` of file -> dedupe -> file, started again after each run with lines
// appended in between: every run resumes where the last one committed, each id comes out
// once. A file record's offset + 1 must be where the file source resumes; when it was
// the line's first byte, the dedupe store looked "behind" its own source on every
// restart and the pipeline never started again.
#include <gtest/gtest.h>

#include <fstream>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

void append(const fs::path& f, const std::string& text) {
  std::ofstream o(f, std::ios::app | std::ios::binary);
  o << text;
}

TEST(FileDedupeRestartRun, EachRunResumesWhereTheLastCommittedAndEveryIdComesOutOnce) {
  auto dir = temp_dir("file-dedupe-restart");
  const fs::path in = dir / "in.jsonl", out = dir / "out.jsonl";
  write_file(dir / "p.yaml",
             "plugin.path: [" + std::string(EXACTLY_PLUGIN_DIR) + "]\npipelines:\n  - name: d\n"
             "    delivery: exactly_once\n"
             "    source: { plugin: file, config: { path: " + in.string() + " } }\n"
             "    transforms:\n"
             "      - plugin: dedupe\n"
             "        config: { id: { json: /id }, state.dir: " + (dir / "state").string() + " }\n"
             "    sink: { plugin: file, config: { path: " + out.string() + " } }\n");
  // A timeout: a host that refuses its own store would retry until stopped.
  const std::string cmd = "timeout -s KILL 30 " + exactly_bin() + " run --no-watch " + (dir / "p.yaml").string();

  write_file(in, "{\"id\":\"a\",\"n\":1}\n{\"id\":\"b\",\"n\":2}\n{\"id\":\"a\",\"n\":3}\n");
  RunResult first = run(cmd, dir);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_EQ(lines_of(read_file(out)),
            (std::vector<std::string>{"{\"id\":\"a\",\"n\":1}", "{\"id\":\"b\",\"n\":2}"}));

  // Lines of different lengths, a duplicate of each earlier id, and one new id.
  append(in, "{\"id\":\"b\",\"n\":4}\n{\"id\":\"c\",\"n\":5,\"pad\":\"xxxxxxxxxxxxxxxx\"}\n{\"id\":\"a\"}\n");
  RunResult second = run(cmd, dir);
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  EXPECT_EQ(second.err.find("behind"), std::string::npos) << second.err;
  EXPECT_EQ(lines_of(read_file(out)),
            (std::vector<std::string>{"{\"id\":\"a\",\"n\":1}", "{\"id\":\"b\",\"n\":2}",
                                      "{\"id\":\"c\",\"n\":5,\"pad\":\"xxxxxxxxxxxxxxxx\"}"}));

  // Nothing new: the third run reads nothing and writes nothing.
  RunResult third = run(cmd, dir);
  ASSERT_EQ(third.exit_code, 0) << third.out << third.err;
  EXPECT_EQ(third.err.find("behind"), std::string::npos) << third.err;
  EXPECT_EQ(lines_of(read_file(out)).size(), 3u);
}

}  // namespace
