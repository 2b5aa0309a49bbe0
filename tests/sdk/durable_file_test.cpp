// sdk::replace_file_atomically, the one durable small-file write the plugins share (file
// positions and commit records, kafka instance ids).
#include <gtest/gtest.h>

#include <exactly/durable_file.hpp>

#include <sys/stat.h>

#include "test_util.hpp"

using namespace exactly::test;

TEST(DurableFile, ReplacesTheWholeContentAndLeavesNoTempFile) {
  auto dir = temp_dir("durable");
  const std::string path = (dir / "positions").string();
  ASSERT_TRUE(exactly::sdk::replace_file_atomically(path, "first, and longer\n").is_ok());
  ASSERT_TRUE(exactly::sdk::replace_file_atomically(path, "second\n", false).is_ok());
  EXPECT_EQ(read_file(path), "second\n");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(DurableFile, AFailureIsAStatusNamingThePath) {
  auto dir = temp_dir("durable");
  const std::string path = (dir / "missing-dir" / "positions").string();
  auto st = exactly::sdk::replace_file_atomically(path, "x");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("missing-dir/positions.tmp"), std::string::npos) << st.message();
}
