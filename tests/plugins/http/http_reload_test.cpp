// A class rate edited in the YAML of a running `exactly run` takes effect in place: the
// host hands the sink its new config at a round boundary (no drain, no restart), and the
// server sees the new rate. A stop or a restarting edit does not wait for a slow server.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>

#include "http_sink_fixture.hpp"

using namespace exactly::test;
using http_test::max_in_window;

namespace {

std::string yaml(const HttpTestServer& srv, int rate) {
  return "pipelines:\n"
         "  - name: to-http\n"
         "    delivery: at_least_once\n"
         "    commit: { interval: 200ms }\n"
         "    source: { plugin: generator, config: { count: 0, rate: 2000, duplicate.ratio: 0, batch.size: 50 } }\n"
         "    sink:\n      plugin: http\n      config:\n"
         "        url: " + srv.base() + "/r/{/seq}\n"
         "        idempotency.key: /messageId\n"
         "        classes: { default: { rate: " + std::to_string(rate) + ", burst: 1 } }\n";
}

std::vector<SeenRequest> between(const std::vector<SeenRequest>& all, double from, double to) {
  std::vector<SeenRequest> out;
  for (auto& r : all)
    if (r.t >= from && r.t < to) out.push_back(r);
  return out;
}

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST(HttpSinkReload, RateEditAppliesInPlace) {
  HttpTestServer srv;
  fs::path dir = temp_dir("http-reload");
  write_file(dir / "p.yaml", yaml(srv, 20));
  Child host({exactly_bin(), "run", (dir / "p.yaml").string()}, dir / "host.log");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  double edit = wall_now();
  write_file(dir / "p.yaml", yaml(srv, 200));
  bool applied = false;
  for (int i = 0; i < 100 && !applied; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    applied = read_file(dir / "host.log").find("reconfigured=to-http") != std::string::npos;
  }
  ASSERT_TRUE(applied) << read_file(dir / "host.log");
  double done = wall_now();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  double end = wall_now();
  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0);
  std::string log = read_file(dir / "host.log");
  EXPECT_NE(log.find("rate classes reconfigured in place"), std::string::npos) << log;
  EXPECT_EQ(log.find("restarted=to-http"), std::string::npos) << log;

  auto all = srv.requests();
  auto before = between(all, edit - 2.0, edit);
  auto after = between(all, done + 0.5, end);
  EXPECT_LE(max_in_window(before, 1.0), 22u) << "rate 20 not kept before the edit";
  EXPECT_GE(max_in_window(after, 1.0), 100u) << "rate 200 not in effect after the edit";
  EXPECT_LE(max_in_window(after, 1.0), 202u);
}

// A bounded input (generator count) that has ended, and a server that answers each
// request after 3 s: the final round waits for the sink to finish, but a stop or a
// reload must not. Both used to wait for every request, so a signal ran into
// shutdown.timeout and exited 3 committing nothing, and a reload that restarts the
// pipeline took the whole host down the same way.
std::string slow_yaml(const HttpTestServer& srv, int in_flight) {
  return "shutdown.timeout: 20s\n"
         "pipelines:\n"
         "  - name: slow\n"
         "    commit: { interval: 200ms }\n"
         "    source: { plugin: generator, config: { count: 200 } }\n"
         "    sink:\n      plugin: http\n      config:\n"
         "        url: " + srv.base() + "/sleep/3000/100000/{/messageId}\n"
         "        max.in.flight: " + std::to_string(in_flight) + "\n";
}

// `exactly run` of dir/p.yaml for 4 s, then SIGTERM: it must exit 0 within
// shutdown.timeout with `pipeline` stopped. Returns its log.
std::string run_then_stop(const fs::path& dir, const std::string& pipeline) {
  {
    Child host({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "host.log");
    std::this_thread::sleep_for(std::chrono::seconds(4));
    host.kill(SIGTERM);
    EXPECT_EQ(host.wait(), 0) << read_file(dir / "host.log");
  }
  std::string log = read_file(dir / "host.log");
  EXPECT_EQ(log.find("did not stop within shutdown.timeout"), std::string::npos) << log;
  std::string row = pipeline;
  row.resize(std::max<size_t>(row.size() + 1, 23), ' ');
  EXPECT_NE(log.find(row + "stopped"), std::string::npos) << log;
  return log;
}

TEST(HttpSinkStop, AStopAtTheEndOfABoundedInputDoesNotWaitForTheServer) {
  HttpTestServer srv;
  fs::path dir = temp_dir("http-stop");
  write_file(dir / "p.yaml", slow_yaml(srv, 4));
  run_then_stop(dir, "slow");
  EXPECT_LT(srv.requests().size(), 200u) << "the input was all delivered before the stop";
}

TEST(HttpSinkStop, ARestartingEditAtTheEndOfABoundedInputDoesNotWaitForTheServer) {
  HttpTestServer srv;
  fs::path dir = temp_dir("http-stop-reload");
  write_file(dir / "p.yaml", slow_yaml(srv, 4));
  Child host({exactly_bin(), "run", (dir / "p.yaml").string()}, dir / "host.log");
  std::this_thread::sleep_for(std::chrono::seconds(4));
  write_file(dir / "p.yaml", slow_yaml(srv, 5));
  bool restarted = false;
  for (int i = 0; i < 150 && !restarted; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    restarted = read_file(dir / "host.log").find("restarted=slow") != std::string::npos;
  }
  EXPECT_TRUE(restarted) << read_file(dir / "host.log");
  // Answered at once instead of after the reconfigure's timeout (commit interval + 10 s).
  EXPECT_NE(read_file(dir / "host.log").find("cannot change in place while the sink finishes the last "
                                             "records of its input; restarting instead"),
            std::string::npos) << read_file(dir / "host.log");
  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0) << read_file(dir / "host.log");
  EXPECT_EQ(read_file(dir / "host.log").find("did not stop"), std::string::npos)
      << read_file(dir / "host.log");
}

// A followed file never ends, and its source keeps no positions of its own between
// batches (no checkpoint_at): every round waits for the sink's window. A stop while the
// server holds each record for 1 s must still end within shutdown.timeout, commit only
// what was answered, and leave the rest to the next run: every line arrives.
TEST(HttpSinkStop, AStopBehindAFollowedFileDoesNotWaitForTheServerAndLosesNothing) {
  HttpTestServer srv;
  fs::path dir = temp_dir("http-stop-follow");
  std::string lines;
  for (int i = 0; i < 100; ++i) lines += "{\"messageId\":\"m" + std::to_string(i) + "\"}\n";
  write_file(dir / "in.jsonl", lines);
  // Each record's first request sleeps 1 s (8 at a time: 100 records take ~13 s); a
  // request again (after the restart) does not.
  write_file(dir / "p.yaml",
             "shutdown.timeout: 20s\n"
             "pipelines:\n"
             "  - name: tail\n"
             "    commit: { interval: 200ms }\n"
             "    source: { plugin: file, config: { path: " + (dir / "in.jsonl").string() +
                 ", follow: true, offsets.path: " + (dir / "in.offset").string() + " } }\n"
             "    sink:\n      plugin: http\n      config:\n"
             "        url: " + srv.base() + "/sleep/1000/1/{/messageId}\n"
             "        max.in.flight: 8\n");
  run_then_stop(dir, "tail");
  std::set<std::string> answered;
  for (const auto& r : srv.requests()) answered.insert(r.path);
  ASSERT_LT(answered.size(), 100u) << "every line was delivered before the stop";

  Child again({exactly_bin(), "run", "--no-watch", (dir / "p.yaml").string()}, dir / "again.log");
  for (int i = 0; i < 300 && answered.size() < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const auto& r : srv.requests()) answered.insert(r.path);
  }
  again.kill(SIGTERM);
  EXPECT_EQ(again.wait(), 0) << read_file(dir / "again.log");
  EXPECT_EQ(answered.size(), 100u) << read_file(dir / "again.log");
}

}  // namespace
