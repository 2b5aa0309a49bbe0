// A KRaft cluster of the test binary's own (`kafka-broker.sh start --nodes N`), for tests
// that stop or kill brokers and so cannot share the suite's broker. Registered as a
// gtest environment: it starts before the binary's tests, and points every helper
// (kafka_tool, kafka_bootstrap, the hosts' YAML, the reader) at itself.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kafka_env.hpp"
#include "test_util.hpp"

namespace exactly::test {

class OwnCluster : public ::testing::Environment {
 public:
  // `extra`: more arguments for `kafka-broker.sh start`, e.g. "--prop k=v".
  OwnCluster(int nodes, std::string heap, std::string extra = "")
      : nodes_(nodes), heap_(std::move(heap)), extra_(std::move(extra)) {}

  void SetUp() override {
    dir() = temp_dir("kafka" + std::to_string(nodes_));
    auto r = run(tools_dir() + "/kafka-broker.sh start --nodes " + std::to_string(nodes_) + " --heap " +
                     heap_ + " --dir " + dir().string() + (extra_.empty() ? "" : " " + extra_),
                 temp_dir("kstart"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    auto lines = lines_of(r.out);
    ASSERT_FALSE(lines.empty());
    setenv("EXACTLY_KAFKA_BOOTSTRAP", lines.back().c_str(), 1);
    setenv("EXACTLY_KAFKA_DIR", dir().c_str(), 1);
    std::printf("%d-broker cluster of its own at %s\n", nodes_, lines.back().c_str());
  }
  void TearDown() override { command("stop --clean"); }

  // `kafka-broker.sh <what> --dir <the cluster>` (e.g. "kill-node 2").
  static RunResult command(const std::string& what) {
    return run(tools_dir() + "/kafka-broker.sh " + what + " --dir " + dir().string(), temp_dir("knode"));
  }
  // `kafka-broker.sh <what> <node>` (kill-node, stop-node, start-node); a failure is a
  // test failure, and false.
  static bool node(const std::string& what, int node) {
    auto r = command(what + " " + std::to_string(node));
    EXPECT_EQ(r.exit_code, 0) << what << " " << node << ": " << r.out << r.err;
    return r.exit_code == 0;
  }

 private:
  static fs::path& dir() {
    static fs::path d;
    return d;
  }
  int nodes_;
  std::string heap_, extra_;
};

}  // namespace exactly::test
