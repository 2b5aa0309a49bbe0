// ABI 1.4 build facts, fact by fact: what the loader refuses and what it lets through
// (the real-.so path is PluginLoader.APluginBuiltWithOtherFactsIsRefusedNamingFileAndFact).
#include <gtest/gtest.h>

#include <cstddef>

#include "plugin/build_facts.hpp"

using exactly::plugin::build_fact_mismatch;

namespace {

ex_plugin_descriptor good() {
  return ex_plugin_descriptor{sizeof(ex_plugin_descriptor), EX_ABI_VERSION, "p", "1", nullptr, 0,
                              EX_PLUGIN_BUILD_FACTS};
}

TEST(BuildFacts, ThisBuildsFactsPass) { EXPECT_EQ(build_fact_mismatch(good()), ""); }

TEST(BuildFacts, EachFactIsCheckedAndNamed) {
  struct Case {
    uint32_t ex_plugin_descriptor::*member;
    const char* name;
  } cases[] = {
      {&ex_plugin_descriptor::pointer_size, "pointer size"},
      {&ex_plugin_descriptor::byte_order, "byte order mark"},
      {&ex_plugin_descriptor::record_size, "sizeof(ex_record)"},
      {&ex_plugin_descriptor::batch_size, "sizeof(ex_batch)"},
      {&ex_plugin_descriptor::partition_size, "sizeof(ex_partition)"},
      {&ex_plugin_descriptor::header_size, "sizeof(ex_header)"},
      {&ex_plugin_descriptor::config_entry_size, "sizeof(ex_config_entry)"},
  };
  for (const auto& c : cases) {
    ex_plugin_descriptor d = good();
    d.*c.member += 4;
    std::string why = build_fact_mismatch(d);
    EXPECT_EQ(why.rfind(std::string("built with ") + c.name + " ", 0), 0u) << why;
  }
}

// ex_batch carries struct_size and may grow at its end in a later minor: a plugin built
// with the smaller one of an older minor reads its prefix and still loads.
TEST(BuildFacts, ASmallerBatchStructOfAnOlderMinorLoads) {
  ex_plugin_descriptor d = good();
  d.batch_size -= 8;
  EXPECT_EQ(build_fact_mismatch(d), "");
  d.record_size -= 8;  // an array element: must match exactly
  EXPECT_EQ(build_fact_mismatch(d).rfind("built with sizeof(ex_record) ", 0), 0u);
}

TEST(BuildFacts, TheOtherByteOrderIsShownAsTheMarkReadBack) {
  ex_plugin_descriptor d = good();
  d.byte_order = __builtin_bswap32(EX_BYTE_ORDER_MARK);
  EXPECT_EQ(build_fact_mismatch(d).rfind(
                "built with byte order mark 0x04030201, this host has 0x01020304", 0),
            0u);
}

TEST(BuildFacts, AFactLeftZeroIsRefusedWithTheMacroToUse) {
  ex_plugin_descriptor d{sizeof(ex_plugin_descriptor), EX_ABI_VERSION, "p", "1", nullptr, 0};
  std::string why = build_fact_mismatch(d);
  EXPECT_NE(why.find("its descriptor does not state its pointer size (0)"), std::string::npos)
      << why;
  EXPECT_NE(why.find("EX_PLUGIN_BUILD_FACTS"), std::string::npos) << why;
}

// Older minors have no facts (their struct_size ends before them); a 1.4 plugin must.
TEST(BuildFacts, OnlyDescriptorsOfOlderMinorsMayEndBeforeTheFacts) {
  ex_plugin_descriptor d = good();
  d.struct_size = offsetof(ex_plugin_descriptor, component_count) + sizeof(size_t);
  d.record_size = 1;  // beyond its struct_size: never read
  d.abi_version = (1u << 16) | 3u;
  EXPECT_EQ(build_fact_mismatch(d), "");
  d.abi_version = (1u << 16) | 4u;
  EXPECT_NE(build_fact_mismatch(d).find("lacks the build facts"), std::string::npos);
}

}  // namespace
