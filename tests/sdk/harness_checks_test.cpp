// The SDK test harness refuses what the host refuses before create(): keys the schema
// does not declare, values of the wrong type, missing required keys, then the
// component's validate(). Before, a plugin author's test could pass a config that the
// host would never hand to create(). Through the real testkit .so.
#include <gtest/gtest.h>

#include <exactly/testing/harness.hpp>

#include <dlfcn.h>

#include <string>

namespace {

namespace xt = exactly::testing;

const std::string kTestkit = std::string(EXACTLY_BUILD_DIR) + "/test-plugins/exactly_testkit.so";

int creates() {
  void* h = dlopen(kTestkit.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return -1;
  auto fn = reinterpret_cast<int (*)()>(dlsym(h, "exactly_testkit_checked_creates"));
  int n = fn ? fn() : -1;
  dlclose(h);
  return n;
}

struct Case {
  xt::Pairs config;
  std::string key, message;
};

}  // namespace

TEST(HarnessChecks, RefusesWhatTheHostRefusesBeforeCreate) {
  xt::Library lib(kTestkit);
  const std::vector<Case> cases = {
      {{{"level", "1"}, {"colour", "red"}}, "colour", "unknown key 'colour'"},
      {{}, "level", "required key 'level' is missing"},
      {{{"level", "ten"}}, "level", "'ten' is not an integer"},
      {{{"level", "1"}, {"ratio", "half"}}, "ratio", "'half' is not a number"},
      {{{"level", "1"}, {"strict", "yes"}}, "strict", "'yes' is not true or false"},
      {{{"level", "1"}, {"wait", "30s"}}, "wait", "milliseconds: '30000', not '30s'"},
      {{{"level", "1"}, {"shape", "oval"}}, "shape", "'oval' is not one of: round, square"},
      {{{"level", "11"}}, "level", "must be at most 10"},  // validate()
  };
  const int before = creates();
  ASSERT_GE(before, 0);
  for (const auto& c : cases) {
    xt::TransformHarness t(lib, "checked", c.config);
    EXPECT_FALSE(t.ok()) << c.message;
    EXPECT_EQ(t.create_status().code(), EX_ERR_CONFIG) << c.message;
    EXPECT_EQ(t.create_status().key(), c.key) << c.message;
    EXPECT_NE(t.create_status().message().find(c.message), std::string::npos) << t.create_status().message();
  }
  EXPECT_EQ(creates(), before) << "create() ran for a config the host would have refused";

  // What the host accepts goes through: map entries under a map key, every type right.
  xt::TransformHarness ok(lib, "checked",
                          {{"level", "10"}, {"ratio", "0.25"}, {"strict", "true"}, {"wait", "250"},
                           {"shape", "square"}, {"extra.anything", "x"}});
  EXPECT_TRUE(ok.ok()) << ok.create_status().message();
  EXPECT_EQ(creates(), before + 1);
}
