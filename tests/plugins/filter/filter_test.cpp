// The filter plugin through its real .so: every op, both actions, invalid values and
// reconfigure in place.
#include <exactly/testing/harness.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using exactly::testing::Library;
using exactly::testing::OwnedRecord;
using exactly::testing::Pairs;
using exactly::testing::rec;
using exactly::testing::TransformHarness;

const Library& lib() {
  static Library l(std::string(EXACTLY_PLUGIN_DIR) + "/exactly_filter.so");
  return l;
}

const std::vector<std::string> kValues = {
    R"({"type":"click","n":42,"user":{"id":"u-1"}})",  // 0
    R"({"type":"view","n":7.5})",                     // 1
    R"({"type":"clickthrough","n":42.0,"flag":true})",// 2
    R"({"n":null,"tags":["a","b"]})",                 // 3
    R"({"type":"cl\u0069ck"})",                       // 4: escaped "click"
};

std::vector<OwnedRecord> input(const std::vector<std::string>& values = kValues) {
  std::vector<OwnedRecord> in;
  for (size_t i = 0; i < values.size(); ++i)
    in.push_back(rec(std::nullopt, values[i], 0, static_cast<int64_t>(i)));
  return in;
}

// Input indices the filter passed on, in order.
std::vector<size_t> kept(const Pairs& cfg, const std::vector<std::string>& values = kValues) {
  TransformHarness t(lib(), "filter", cfg);
  EXPECT_TRUE(t.ok()) << t.create_status().message();
  if (!t.ok()) return {};
  auto out = t.process(input(values));
  EXPECT_TRUE(out.rejected.empty());
  EXPECT_EQ(out.records.size(), out.kept.size()) << "filter must keep, never rewrite";
  return out.kept;
}

using Idx = std::vector<size_t>;

TEST(Filter, EqOnStringsNumbersAndNested) {
  EXPECT_EQ(kept({{"field", "/type"}, {"value", "click"}}), (Idx{0, 4}));
  EXPECT_EQ(kept({{"field", "/n"}, {"value", "42"}}), (Idx{0, 2}));
  EXPECT_EQ(kept({{"field", "/n"}, {"value", "7.5"}}), (Idx{1}));
  EXPECT_EQ(kept({{"field", "/n"}, {"value", "null"}}), (Idx{3}));
  EXPECT_EQ(kept({{"field", "/flag"}, {"value", "true"}}), (Idx{2}));
  EXPECT_EQ(kept({{"field", "/user/id"}, {"value", "u-1"}}), (Idx{0}));
  EXPECT_EQ(kept({{"field", "/tags/1"}, {"value", "b"}}), (Idx{3}));
  EXPECT_EQ(kept({{"field", "/tags"}, {"value", R"(["a","b"])"}}), (Idx{3}));
}

TEST(Filter, NeIsTheNegationOfEq) {
  EXPECT_EQ(kept({{"field", "/type"}, {"op", "ne"}, {"value", "click"}}), (Idx{1, 2, 3}));
}

TEST(Filter, ExistsAndMissing) {
  EXPECT_EQ(kept({{"field", "/type"}, {"op", "exists"}}), (Idx{0, 1, 2, 4}));
  EXPECT_EQ(kept({{"field", "/type"}, {"op", "missing"}}), (Idx{3}));
  EXPECT_EQ(kept({{"field", "/n"}, {"op", "exists"}}), (Idx{0, 1, 2, 3})) << "null is present";
}

TEST(Filter, PrefixAndRegex) {
  EXPECT_EQ(kept({{"field", "/type"}, {"op", "prefix"}, {"value", "click"}}), (Idx{0, 2, 4}));
  EXPECT_EQ(kept({{"field", "/type"}, {"op", "regex"}, {"value", "^(view|click)$"}}),
            (Idx{0, 1, 4}));
  EXPECT_EQ(kept({{"field", "/type"}, {"op", "regex"}, {"value", "through"}}), (Idx{2}));
}

// A record's field is hostile input. libstdc++'s std::regex, the engine before RE2,
// backtracks recursively: with a 1 MiB field each case overflowed its stack (the host
// died of SIGSEGV), and `.*x` was quadratic below that (2.6 s per record at 10 KB).
// RE2 answers them in time linear in the field.
TEST(Filter, RegexOnAHugeFieldNeitherCrashesNorBacktracks) {
  const std::string huge = std::string(R"({"type":")") + std::string(1 << 20, 'a') + "\"}";
  const std::string mixed = std::string(R"({"type":")") + std::string(1 << 20, 'a') + "b\"}";
  const std::vector<std::string> values = {huge, mixed};
  EXPECT_EQ(kept({{"field", "/type"}, {"op", "regex"}, {"value", "^[a-z]*$"}}, values), (Idx{0, 1}));
  EXPECT_EQ(kept({{"field", "/type"}, {"op", "regex"}, {"value", "^a+$"}}, values), (Idx{0}));
  EXPECT_EQ(kept({{"field", "/type"}, {"op", "regex"}, {"value", "(a|b)*b$"}}, values), (Idx{1}));
  EXPECT_EQ(kept({{"field", "/type"}, {"op", "regex"}, {"value", ".*x"}}, values), (Idx{}));
}

TEST(Filter, ABackreferenceOrLookaroundIsRefusedWithTheReason) {
  TransformHarness back(lib(), "filter", {{"field", "/type"}, {"op", "regex"}, {"value", "(a)\\1"}});
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.create_status().key(), "value");
  EXPECT_NE(back.create_status().message().find("no backreferences"), std::string::npos)
      << back.create_status().message();
  TransformHarness look(lib(), "filter", {{"field", "/type"}, {"op", "regex"}, {"value", "a(?!b)"}});
  ASSERT_FALSE(look.ok());
  EXPECT_EQ(look.create_status().key(), "value");
  EXPECT_NE(look.create_status().message().find("no lookahead or lookbehind"), std::string::npos)
      << look.create_status().message();
}

TEST(Filter, DropActionInvertsTheSelection) {
  EXPECT_EQ(kept({{"field", "/type"}, {"value", "click"}, {"action", "drop"}}), (Idx{1, 2, 3}));
  EXPECT_EQ(kept({{"field", "/type"}, {"op", "missing"}, {"action", "drop"}}), (Idx{0, 1, 2, 4}));
}

TEST(Filter, InvalidJsonIsRejectedWithAReason) {
  std::vector<std::string> values = {R"({"type":"click"})", "not json", R"({"type":"cl)", "",
                                     R"({"type":"click"})"};
  TransformHarness t(lib(), "filter", {{"field", "/type"}, {"value", "click"}});
  ASSERT_TRUE(t.ok());
  auto out = t.process(input(values));
  EXPECT_EQ(out.kept, (Idx{0, 4}));
  ASSERT_EQ(out.rejected.size(), 3u);
  EXPECT_EQ(out.rejected[0].first, 1u);
  EXPECT_EQ(out.rejected[1].first, 2u);
  EXPECT_EQ(out.rejected[2].first, 3u);
  for (auto& [i, why] : out.rejected) {
    EXPECT_NE(why.find("not valid JSON"), std::string::npos) << why;
    EXPECT_NE(why.find("/type"), std::string::npos) << why;
  }
  EXPECT_EQ(t.host().metric("filter_invalid_total"), 3.0);
}

TEST(Filter, InvalidJsonCanBeDroppedOrKept) {
  std::vector<std::string> values = {"{oops", R"({"type":"click"})", R"({"type":"x"})"};
  EXPECT_EQ(kept({{"field", "/type"}, {"value", "click"}, {"on.invalid", "drop"}}, values),
            (Idx{1}));
  EXPECT_EQ(kept({{"field", "/type"}, {"value", "click"}, {"on.invalid", "keep"}}, values),
            (Idx{0, 1}));
}

TEST(Filter, CountsDroppedRecords) {
  TransformHarness t(lib(), "filter", {{"field", "/type"}, {"value", "click"}});
  t.process(input());
  t.process(input());
  EXPECT_EQ(t.host().metric("filter_dropped_total"), 6.0);
}

TEST(Filter, ReconfigureAppliesFromTheNextBatch) {
  TransformHarness t(lib(), "filter", {{"field", "/type"}, {"value", "click"}});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.process(input()).kept, (Idx{0, 4}));
  ASSERT_TRUE(t.reconfigure({{"field", "/type"}, {"op", "eq"}, {"value", "view"},
                             {"action", "keep"}, {"on.invalid", "reject"}})
                  .is_ok());
  EXPECT_EQ(t.process(input()).kept, (Idx{1}));
  // A bad config is refused and the running rules stay.
  auto st = t.reconfigure({{"field", "/type"}, {"op", "regex"}, {"value", "(unclosed"}});
  EXPECT_EQ(st.code(), EX_ERR_CONFIG);
  EXPECT_EQ(st.key(), "value");
  EXPECT_EQ(t.process(input()).kept, (Idx{1}));
}

TEST(Filter, BadConfigNamesTheKey) {
  struct Case {
    Pairs cfg;
    std::string key;
  };
  std::vector<Case> cases = {
      {{}, "field"},
      {{{"field", "type"}, {"value", "x"}}, "field"},
      {{{"field", "/a~2b"}, {"value", "x"}}, "field"},
      {{{"field", "/type"}}, "value"},
      {{{"field", "/type"}, {"op", "like"}, {"value", "x"}}, "op"},
      {{{"field", "/type"}, {"value", "x"}, {"action", "maybe"}}, "action"},
      {{{"field", "/type"}, {"value", "x"}, {"on.invalid", "ignore"}}, "on.invalid"},
      {{{"field", "/type"}, {"op", "regex"}, {"value", "[z-a]"}}, "value"},
  };
  for (auto& c : cases) {
    TransformHarness t(lib(), "filter", c.cfg);
    EXPECT_FALSE(t.ok());
    EXPECT_EQ(t.create_status().code(), EX_ERR_CONFIG);
    EXPECT_EQ(t.create_status().key(), c.key);
  }
  TransformHarness root(lib(), "filter", {{"field", ""}, {"value", "7"}});
  EXPECT_TRUE(root.ok()) << "the empty pointer addresses the whole value";
  EXPECT_EQ(root.process(input({"7", "8", "\"7\""})).kept, (Idx{0, 2}));
}

// ABI 1.3: the exported validate refuses what create() refuses, with the same key, and
// accepts what create() accepts (the SDK maps the ConfigError across the boundary).
TEST(FilterPlugin, ValidateAgreesWithCreate) {
  struct C {
    Pairs cfg;
    std::string key;  // "" = valid
  };
  const std::vector<C> cases = {
      {{{"field", "/type"}, {"value", "x"}}, ""},
      {{{"field", "type"}, {"value", "x"}}, "field"},
      {{{"field", "/type"}, {"op", "regex"}, {"value", "[z-a]"}}, "value"},
      {{{"field", "/type"}, {"op", "eq"}}, "value"},
      // Found by fuzz_filter_config (tests/fuzz/crashers/filter_config/) when the engine was
      // std::regex, which read these numbers without a bound and compiled nesting
      // recursively. RE2 reads them as an octal escape and a literal brace, and nests
      // groups without recursion: valid patterns now.
      {{{"field", "/type"}, {"op", "regex"}, {"value", "(a)\\6222222222222222222"}}, ""},
      {{{"field", "/type"}, {"op", "regex"}, {"value", "a{1,99999999999999999999}"}}, ""},
      {{{"field", "/type"}, {"op", "regex"}, {"value", std::string(40, '(') + "a" + std::string(40, ')')}}, ""},
      // What RE2 refuses so that matching stays linear: backreferences, lookaround, and
      // repetition counts over 1000.
      {{{"field", "/type"}, {"op", "regex"}, {"value", "^4111111111111111$|(a)\\1{2,3}"}}, "value"},
      {{{"field", "/type"}, {"op", "regex"}, {"value", "(?=x)a"}}, "value"},
      {{{"field", "/type"}, {"op", "regex"}, {"value", "a{1001}"}}, "value"},
  };
  for (auto& c : cases) {
    auto st = exactly::testing::validate(lib(), EX_KIND_TRANSFORM, "filter", c.cfg);
    TransformHarness t(lib(), "filter", c.cfg);
    EXPECT_EQ(st.is_ok(), t.ok()) << c.key;
    if (c.key.empty()) continue;
    EXPECT_EQ(st.code(), EX_ERR_CONFIG);
    EXPECT_EQ(st.key(), c.key);
    EXPECT_EQ(st.key(), t.create_status().key());
  }
}

}  // namespace
