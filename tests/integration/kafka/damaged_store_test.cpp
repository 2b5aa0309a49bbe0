// A host killed with work in flight comes back to a damaged dedupe store (RocksDB's
// CURRENT file garbled while it was down, as a torn write or a bad disk leaves it).
// Before, the partition was refused at every restart and the whole pipeline stalled until
// an operator moved the directory away. With on.store.damaged: restore (the default) the
// stage sets the store aside and restores the partition from its changelog: an independent
// read_committed reader finds every distinct id exactly once.
#include <gtest/gtest.h>

#include <csignal>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "output_checks.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

TEST(DamagedStore, AKilledHostsDamagedStoreIsSetAsideAndRestoredWithoutDuplicates) {
  const std::string in = unique_name("dmg-in"), out = unique_name("dmg-out"), group = unique_name("dmg-g");
  const fs::path dir = temp_dir("damaged-store");
  create_in_out_topics(in, out);
  write_file(dir / "host.yaml", dedupe_host_yaml("dmg", in, out, group, dir / "state"));
  Host host("host", dir / "host.yaml", dir / "host.log");
  const long long records = 24000;
  auto producer = produce_while_running(in, records, 1500, "0.2", 43, dir / "producer.log");
  host.start();
  ASSERT_TRUE(wait_for([&] { return committed_total(group, in) > 4000; }, std::chrono::seconds(90)))
      << host.log_tail();
  int code = -1;
  ASSERT_FALSE(producer->exited(&code)) << "the input was complete before the kill; slow it down";
  host.stop(SIGKILL);

  // One store's CURRENT file garbled: RocksDB reports corruption at its open.
  fs::path store;
  for (auto& e : fs::directory_iterator(dir / "state" / "dedupe"))
    if (fs::exists(e.path() / "CURRENT")) store = e.path();
  ASSERT_FALSE(store.empty()) << "no dedupe store under " << (dir / "state" / "dedupe");
  write_file(store / "CURRENT", "MANIFEST-garbled");

  host.start();
  EXPECT_EQ(producer->wait(), 0) << read_file(dir / "producer.log");
  EXPECT_TRUE(wait_committed(group, in, records, std::chrono::seconds(120)))
      << "committed " << committed_total(group, in) << " of " << records << "\n" << host.log_tail();
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();

  const std::string log = read_file(host.log());
  EXPECT_NE(log.find("on.store.damaged is restore: the store is moved to " + store.string() + ".damaged-"),
            std::string::npos)
      << host.log_tail();
  int aside = 0;
  for (auto& e : fs::directory_iterator(dir / "state" / "dedupe"))
    aside += e.path().filename().string().rfind(store.filename().string() + ".damaged-", 0) == 0;
  EXPECT_EQ(aside, 1);
  wait_output_settled(out);
  auto v = expect_dedupe_exactly_once(in, out, records);
  EXPECT_GT(json_number(v.out, "input"), json_number(v.out, "distinct_ids"));
}

}  // namespace
