// The host reads a plugin's ex_error no further than its arrays (plugin_abi.h, LIFETIME of
// ex_error): a plugin that filled `message` or `key` to the end without a NUL gets them
// cut at the array's size instead of the host reading past the struct.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/components.hpp"

namespace {

TEST(AbiError, AnUnterminatedMessageAndKeyAreReadUpToTheirArrays) {
  struct {
    ex_error e;
    char after[64];  // what an unbounded read would run into
  } mem;
  std::memset(&mem, 'z', sizeof(mem));
  mem.e.struct_size = sizeof(ex_error);
  mem.e.code = EX_ERR_CONFIG;
  std::memset(mem.e.key, 'k', sizeof(mem.e.key));
  std::memset(mem.e.message, 'm', sizeof(mem.e.message));
  auto o = exactly::engine::Outcome::from(EX_ERR_CONFIG, mem.e);
  EXPECT_EQ(o.code, EX_ERR_CONFIG);
  EXPECT_EQ(o.key, std::string(EX_ERROR_KEY_MAX, 'k'));
  EXPECT_EQ(o.message, std::string(EX_ERROR_MESSAGE_MAX, 'm'));
}

TEST(AbiError, ATerminatedMessageIsReadUpToItsNul) {
  ex_error e = exactly::engine::new_error();
  std::strcpy(e.message, "broker away");
  auto o = exactly::engine::Outcome::from(EX_ERR_RETRIABLE, e);
  EXPECT_EQ(o.message, "broker away");
  EXPECT_EQ(o.key, "");
}

}  // namespace
