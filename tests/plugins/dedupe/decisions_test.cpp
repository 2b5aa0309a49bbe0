// Claim / replay / duplicate / conflict decisions and the round protocol.
#include "dedupe_fixture.hpp"

namespace dedupe_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST_F(DedupeTest, NewIdsAreEmittedAndRepeatsDropped) {
  auto& t = start();
  auto out = t.process({event("a", 0), event("b", 1), event("c", 2)});
  EXPECT_THAT(out.kept, ElementsAre(0u, 1u, 2u));
  commit_round();
  out = t.process({event("b", 3), event("d", 4), event("a", 5)});
  EXPECT_THAT(out.kept, ElementsAre(1u));
  EXPECT_THAT(out.rejected, IsEmpty());
  EXPECT_EQ(metric("dedupe_duplicates_total"), 2);
  EXPECT_EQ(metric("dedupe_claims_total"), 4);
}

TEST_F(DedupeTest, DuplicatesInsideOneBatchAreCaught) {
  auto& t = start();
  auto out = t.process({event("a", 0), event("a", 1), event("b", 2), event("a", 3), event("b", 4)});
  EXPECT_THAT(out.kept, ElementsAre(0u, 2u));
  EXPECT_EQ(metric("dedupe_duplicates_total"), 3);
}

TEST_F(DedupeTest, DuplicatesAcrossBatchesOfOneRoundAreCaughtBeforeTheWrite) {
  auto& t = start();
  EXPECT_THAT(t.process({event("a", 0), event("b", 1)}).kept, ElementsAre(0u, 1u));
  EXPECT_THAT(t.process({event("b", 2), event("c", 3)}).kept, ElementsAre(1u));
  EXPECT_THAT(t.process({event("a", 4), event("c", 5)}).kept, IsEmpty());
  commit_round();
  EXPECT_THAT(t.process({event("a", 6), event("b", 7), event("c", 8)}).kept, IsEmpty());
  EXPECT_EQ(metric("dedupe_duplicates_total"), 6);
}

TEST_F(DedupeTest, TheOwnerIsEmittedAgainOnReplay) {
  auto& t = start();
  EXPECT_THAT(t.process({event("a", 0), event("b", 1), event("a", 2)}).kept, ElementsAre(0u, 1u));
  commit_round();
  // The sink failed after the claims were durable: the source replays from offset 0.
  ASSERT_TRUE(t.abort().is_ok());
  auto out = t.process({event("a", 0), event("b", 1), event("a", 2)});
  EXPECT_THAT(out.kept, ElementsAre(0u, 1u));
  EXPECT_EQ(metric("dedupe_replays_total"), 2);
  EXPECT_EQ(metric("dedupe_duplicates_total"), 2);
}

TEST_F(DedupeTest, ClaimsSurviveDestroyAndReopen) {
  auto& t = start();
  t.process({event("a", 0), event("b", 1)});
  commit_round();
  auto& t2 = start({}, {part(0, "events-0", 2)});
  auto out = t2.process({event("a", 2), event("b", 1), event("c", 3)});
  // a@2 is a duplicate, b@1 replays its owner, c is new.
  EXPECT_THAT(out.kept, ElementsAre(1u, 2u));
}

TEST_F(DedupeTest, AbortDropsClaimsNotYetWritten) {
  auto& t = start();
  EXPECT_THAT(t.process({event("a", 0), event("b", 1)}).kept, ElementsAre(0u, 1u));
  ASSERT_TRUE(t.abort().is_ok());
  // Had the claims of a@0 and b@1 survived, these other records would be duplicates.
  EXPECT_THAT(t.process({event("a", 5), event("b", 6)}).kept, ElementsAre(0u, 1u));
  ASSERT_TRUE(t.abort().is_ok());
  commit_round();
  auto& t2 = start({}, {part(0, "events-0", 0)});
  EXPECT_THAT(t2.process({event("a", 7), event("b", 8)}).kept, ElementsAre(0u, 1u));
}

TEST_F(DedupeTest, ACrashBeforePrepareCommitLosesNothingThatWasCommitted) {
  auto& t = start();
  t.process({event("a", 0)});
  commit_round();
  t.process({event("b", 1)});  // never committed: the process dies here
  auto& t2 = start({}, {part(0, "events-0", 1)});
  auto out = t2.process({event("b", 1), event("a", 2), event("b", 3)});
  EXPECT_THAT(out.kept, ElementsAre(0u));
}

TEST_F(DedupeTest, ConflictCountsAsDuplicateByDefault) {
  auto& t = start();
  t.process({event("a", 0, 0, "one")});
  commit_round();
  auto out = t.process({event("a", 1, 0, "two"), event("a", 2, 0, "one")});
  EXPECT_THAT(out.kept, IsEmpty());
  EXPECT_THAT(out.rejected, IsEmpty());
  EXPECT_EQ(metric("dedupe_conflicts_total"), 1);
  EXPECT_EQ(metric("dedupe_duplicates_total"), 2);
}

TEST_F(DedupeTest, ConflictRejectHandsTheRecordToTheErrorPolicy) {
  auto& t = start({{"on.conflict", "reject"}});
  t.process({event("a", 0, 0, "one")});
  auto out = t.process({event("a", 1, 0, "two"), event("a", 2, 0, "one")});
  EXPECT_THAT(out.kept, IsEmpty());
  ASSERT_EQ(out.rejected.size(), 1u);
  EXPECT_EQ(out.rejected[0].first, 0u);
  EXPECT_NE(out.rejected[0].second.find("conflict"), std::string::npos);
  EXPECT_NE(out.rejected[0].second.find("offset 0"), std::string::npos);
  EXPECT_EQ(metric("dedupe_conflicts_total"), 1);
  EXPECT_EQ(metric("dedupe_duplicates_total"), 1);
}

TEST_F(DedupeTest, ConflictStopFailsNamingPartitionAndOffset) {
  auto& t = start({{"on.conflict", "stop"}});
  t.process({event("a", 0, 0, "one")});
  commit_round();
  exactly::sdk::Status st;
  t.process({event("b", 1), event("a", 2, 0, "two")}, &st);
  EXPECT_EQ(st.code(), EX_ERR_CONFIG);
  EXPECT_NE(st.message().find("events-0"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("offset 2"), std::string::npos) << st.message();
}

TEST_F(DedupeTest, NoFingerprintMeansNoConflicts) {
  auto& t = start({{"fingerprint.bytes", "0"}, {"on.conflict", "stop"}});
  t.process({event("a", 0, 0, "one")});
  exactly::sdk::Status st;
  auto out = t.process({event("a", 1, 0, "two")}, &st);
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_THAT(out.kept, IsEmpty());
  EXPECT_EQ(metric("dedupe_conflicts_total"), 0);
}

TEST_F(DedupeTest, ManyIdsOverManyRoundsMatchAReferenceSet) {
  auto& t = start();
  std::mt19937_64 rng(7);
  std::set<std::string> seen;
  int64_t offset = 0;
  for (int round = 0; round < 20; ++round) {
    for (int b = 0; b < 3; ++b) {
      std::vector<OwnedRecord> batch;
      std::vector<size_t> expect;
      std::set<std::string> in_batch;
      for (int i = 0; i < 200; ++i) {
        std::string id = "id-" + std::to_string(rng() % 3000);
        if (!seen.count(id) && !in_batch.count(id)) expect.push_back(batch.size());
        in_batch.insert(id);
        batch.push_back(event(id, offset++));
      }
      EXPECT_EQ(t.process(batch).kept, expect) << "round " << round;
      seen.insert(in_batch.begin(), in_batch.end());
    }
    commit_round();
  }
}

}  // namespace
}  // namespace dedupe_test
