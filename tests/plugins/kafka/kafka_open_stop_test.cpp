// A stop while the kafka sink's open() waits for a cluster that does not answer ends the
// wait (ABI 1.5 `stopping`), instead of holding the host for open.timeout. No broker:
// nothing listens on the bootstrap port.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "test_util.hpp"

using namespace exactly::test;

TEST(KafkaOpen, AStopWhileTheClusterIsUnreachableEndsTheWaitAtOnce) {
  auto dir = temp_dir("kafka-open-stop");
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: nowhere\n"
             "    source: { plugin: generator, config: { count: 100 } }\n"
             "    sink:\n"
             "      plugin: kafka\n"
             "      config: { bootstrap.servers: \"127.0.0.1:1\", topic: out, open.timeout: 120s,\n"
             "                state.dir: " + (dir / "state").string() + " }\n");
  const fs::path log = dir / "log.txt";
  Child c({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, log);
  for (int i = 0; i < 200 && read_file(log).find("started 1 pipeline") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // inside open(), waiting
  c.kill(SIGTERM);
  EXPECT_EQ(c.wait(), 0) << read_file(log);
  const std::string text = read_file(log);
  // The wait ended on the stop, not on the timeout (120 s, which this test would not
  // outlive).
  EXPECT_NE(text.find("kafka: stop asked while waiting for 127.0.0.1:1; not waiting any longer"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("no metadata within"), std::string::npos) << text;
  EXPECT_NE(text.find("nowhere "), std::string::npos) << text;
  EXPECT_NE(text.find("stopped"), std::string::npos) << text;
}
