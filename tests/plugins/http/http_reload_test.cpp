// A class rate edited in the YAML of a running `exactly run` takes effect in place: the
// host hands the sink its new config at a round boundary (no drain, no restart), and the
// server sees the new rate.
#include <gtest/gtest.h>

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

}  // namespace
