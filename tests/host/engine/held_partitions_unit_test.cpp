// The bookkeeping behind ABI 1.2 holds, without a pipeline: which partitions the host
// pauses and resumes at the source, and when.
#include <gtest/gtest.h>

#include <string>

#include "engine/held_partitions.hpp"

using exactly::engine::HeldPartitions;

namespace {
ex_partition part(int32_t id, const std::string& name, int64_t start) {
  return ex_partition{sizeof(ex_partition), id,
                      ex_bytes{reinterpret_cast<const uint8_t*>(name.data()), name.size()},
                      ex_bytes{reinterpret_cast<const uint8_t*>("t"), 1}, id, start};
}
}  // namespace

TEST(HeldPartitionsBook, APartitionIsResumedOnlyWhenItsLastHolderReleasesIt) {
  HeldPartitions h;
  const std::string name = "t-0";
  EXPECT_TRUE(h.hold(part(0, name, 5)));
  EXPECT_FALSE(h.hold(part(0, name, 5)));  // a second stage: paused once
  ASSERT_EQ(h.take_pauses().size(), 1u);
  h.release(0);
  EXPECT_TRUE(h.take_resumes().empty());
  EXPECT_TRUE(h.held(0));
  h.release(0);
  auto r = h.take_resumes();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].start, 5);
  EXPECT_FALSE(h.held(0));
}

// A stage's release that raced the revocation of its partition belongs to that
// assignment: after the partition comes back and is held again, it does not resume it.
TEST(HeldPartitionsBook, AReleaseFromBeforeARevocationDoesNotResumeTheNextHold) {
  HeldPartitions h;
  const std::string name = "t-0";
  h.hold(part(0, name, 5));
  ASSERT_EQ(h.take_pauses().size(), 1u);
  h.release(0);  // the restore finished just as the partition was revoked
  h.forget(0);
  h.hold(part(0, name, 90));  // back, at a later offset, preparing again
  ASSERT_EQ(h.take_pauses().size(), 1u);
  EXPECT_TRUE(h.take_resumes().empty()) << "resumed while its stage still prepares it";
  EXPECT_TRUE(h.held(0));
  h.release(0);
  auto r = h.take_resumes();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].start, 90);
}
