// The declared schema is what the host validates and `exactly plugins` prints.
#include <set>

#include "dedupe_fixture.hpp"

namespace dedupe_test {
namespace {

TEST(DedupeSchema, DeclaresEveryKeyWithDocs) {
  const ex_component& c = library().component(EX_KIND_TRANSFORM, "dedupe");
  std::set<std::string> keys;
  for (size_t i = 0; i < c.field_count; ++i) {
    const auto& f = c.fields[i];
    keys.insert(f.key);
    EXPECT_NE(f.doc, nullptr) << f.key;
    EXPECT_GT(std::string(f.doc ? f.doc : "").size(), 10u) << f.key;
    if (std::string(f.key) == "state.dir") EXPECT_TRUE(f.required);
    if (std::string(f.key) == "on.conflict") {
      ASSERT_NE(f.allowed, nullptr);
      std::set<std::string> allowed;
      for (auto a = f.allowed; *a; ++a) allowed.insert(*a);
      EXPECT_EQ(allowed, (std::set<std::string>{"duplicate", "reject", "stop"}));
      EXPECT_STREQ(f.default_value, "duplicate");
    }
    if (std::string(f.key) == "on.store.behind") EXPECT_STREQ(f.default_value, "fail");
    if (std::string(f.key) == "retention.max.bytes") EXPECT_EQ(f.type, EX_CFG_SIZE);
    if (std::string(f.key) == "retention.max.age") EXPECT_EQ(f.type, EX_CFG_DURATION);
  }
  for (auto k : {"id.key", "id.header", "id.json", "id.max.bytes", "state.dir", "on.conflict",
                 "on.store.behind", "retention.max.keys", "retention.max.bytes",
                 "retention.max.age"})
    EXPECT_TRUE(keys.count(k)) << k;
  EXPECT_EQ(keys.size(), c.field_count) << "duplicate keys";
}

}  // namespace
}  // namespace dedupe_test
