// Rate classes: token buckets measured at the server, fuses by hand and by failures, and
// a rate changed in place.
#include "http_sink_fixture.hpp"

#include <future>
#include <thread>

namespace {

using namespace http_test;

// Class a: 20/s with a burst of 5; class b unlimited. In any one-second window the
// server sees at most rate + burst requests of a (+1 for a window that starts on a
// token), while b is not held back by a.
TEST(HttpSinkRate, ClassRateMeasuredAtTheServerOthersFlow) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http",
                job_config(srv, {{"classes.a.rate", "20"}, {"classes.a.burst", "5"}}));
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  std::vector<OwnedRecord> in;
  for (int i = 0; i < 60; ++i) {
    in.push_back(ok_job("a", std::to_string(i)));
    in.push_back(ok_job("b", std::to_string(i)));
  }
  EXPECT_TRUE(s.write(in).empty());
  auto seen = srv.requests();
  auto a = with_prefix(seen, "/ok/x/x/a-"), b = with_prefix(seen, "/ok/x/x/b-");
  ASSERT_EQ(a.size(), 60u);
  ASSERT_EQ(b.size(), 60u);
  EXPECT_LE(max_in_window(a, 1.0), 26u) << "class a went over rate + burst";
  EXPECT_GE(max_in_window(a, 1.0), 15u) << "class a far below its rate";
  std::vector<double> ta;
  for (auto& r : a) ta.push_back(r.t);
  std::sort(ta.begin(), ta.end());
  double last_b = 0;
  for (auto& r : b) last_b = std::max(last_b, r.t);
  EXPECT_LT(last_b, ta[30]) << "class b waited for class a";
  EXPECT_DOUBLE_EQ(s.host().metric("http_sink_class_rate{class=a}"), 20.0);
}

// A slow class holds no more than its share of the slots while another class could send:
// turns alone handed it every slot a fast class gave back, until it held them all and the
// fast class went at the slow one's pace. With 4 slots and two classes, class a (each
// request 2.5 s: long enough that b's 20 requests fit before it on a loaded machine; 1 s
// failed once beside a QA cluster) holds 2; b's 20 requests (answered at once) all reach
// the server before a's third, which waits for a slot of a's own.
TEST(HttpSinkRate, ASlowClassHoldsItsShareOfTheSlotsNotAll) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http",
                job_config(srv, {{"classes.a.rate", "0"}, {"classes.b.rate", "0"}, {"max.in.flight", "4"}}));
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  std::vector<OwnedRecord> in;
  for (int i = 0; i < 20; ++i) {
    if (i < 6) in.push_back(job("sleep", "2500", "9", "a", std::to_string(i)));
    in.push_back(ok_job("b", std::to_string(i)));
  }
  EXPECT_TRUE(s.write(in).empty());
  auto seen = srv.requests();
  auto a = with_prefix(seen, "/sleep/2500/9/a-"), b = with_prefix(seen, "/ok/x/x/b-");
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 20u);
  std::vector<double> ta;
  for (auto& r : a) ta.push_back(r.t);
  std::sort(ta.begin(), ta.end());
  double last_b = 0;
  for (auto& r : b) last_b = std::max(last_b, r.t);
  EXPECT_LT(last_b, ta[2]) << "class b waited for a slot that slow class a took";
}

TEST(HttpSinkRate, FusedByHandSendsNothingWhileOthersFlow) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http", job_config(srv, {{"classes.a.open", "true"}}));
  ASSERT_TRUE(s.ok());
  std::vector<OwnedRecord> in;
  for (int i = 0; i < 10; ++i) {
    in.push_back(ok_job("a", std::to_string(i)));
    in.push_back(ok_job("b", std::to_string(i)));
  }
  auto rejected = s.write(in);
  ASSERT_EQ(rejected.size(), 10u);
  for (auto& [i, why] : rejected) {
    EXPECT_EQ(i % 2, 0u);
    EXPECT_NE(why.find("fuse open for class 'a' (not sent)"), std::string::npos) << why;
  }
  auto seen = srv.requests();
  EXPECT_EQ(with_prefix(seen, "/ok/x/x/a-").size(), 0u);
  EXPECT_EQ(with_prefix(seen, "/ok/x/x/b-").size(), 10u);
  EXPECT_DOUBLE_EQ(s.host().metric("http_sink_fuse_state{class=a}"), 1.0);
  EXPECT_DOUBLE_EQ(s.host().metric("http_sink_fuse_rejected_total{class=a}"), 10.0);
}

// Three failures in a row open a's fuse: the rest of a's records are not sent. After the
// cool-down one probe goes; its success closes the fuse. The cool-down is long enough
// that a loaded machine does not pass it between two writes (400 ms did once).
TEST(HttpSinkRate, FuseOpensAfterConsecutiveFailuresAndProbesAfterCooldown) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http",
                job_config(srv, {{"max.in.flight", "1"},
                                 {"retry.max", "0"},
                                 {"classes.a.fuse.failures", "3"},
                                 {"classes.a.fuse.cooldown", "2s"}}));
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  std::vector<OwnedRecord> in;
  for (int i = 0; i < 10; ++i) {
    in.push_back(job("always", "503", "x", "a", std::to_string(i)));
    in.push_back(ok_job("b", std::to_string(i)));
  }
  auto rejected = s.write(in);
  ASSERT_EQ(rejected.size(), 10u);
  int fused = 0;
  for (auto& [i, why] : rejected) fused += why.find("fuse open") != std::string::npos;
  EXPECT_EQ(fused, 7);
  auto seen = srv.requests();
  EXPECT_EQ(with_prefix(seen, "/always/").size(), 3u);
  EXPECT_EQ(with_prefix(seen, "/ok/x/x/b-").size(), 10u);

  // Still open: turned away without a request.
  rejected = s.write({ok_job("a", "early")});
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(with_prefix(srv.requests(), "/ok/x/x/a-").size(), 0u);

  auto logged = [&](const std::string& what) {
    for (const auto& [level, text] : s.host().logs)
      if (text.find(what) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(logged("fuse of class 'a' opened")) << "no log line naming the class whose fuse opened";
  EXPECT_FALSE(logged("fuse of class 'b'"));

  std::this_thread::sleep_for(std::chrono::milliseconds(2200));
  // The cool-down is over: half-open (2), waiting for a record to probe with, not "open"
  // (QA: the gauge said open for as long as no record came).
  EXPECT_TRUE(s.write({}).empty());
  EXPECT_DOUBLE_EQ(s.host().metric("http_sink_fuse_state{class=a}"), 2.0);
  std::vector<OwnedRecord> later;
  for (int i = 0; i < 5; ++i) later.push_back(ok_job("a", "late" + std::to_string(i)));
  EXPECT_TRUE(s.write(later).empty());
  EXPECT_EQ(with_prefix(srv.requests(), "/ok/x/x/a-late").size(), 5u);
  EXPECT_DOUBLE_EQ(s.host().metric("http_sink_fuse_state{class=a}"), 0.0);
  EXPECT_TRUE(logged("fuse of class 'a' closed")) << "no log line when the fuse closed again";
}

// An operator who turns an open fuse off (fuse.failures: 0) gets the class's records
// sent at once; before, the fuse stayed open until a restart.
TEST(HttpSinkRate, TurningAnOpenFuseOffInPlaceSendsAgain) {
  HttpTestServer srv;
  Pairs on = job_config(srv, {{"max.in.flight", "1"}, {"retry.max", "0"},
                              {"classes.a.fuse.failures", "2"}, {"classes.a.fuse.cooldown", "1h"}});
  Pairs off = job_config(srv, {{"max.in.flight", "1"}, {"retry.max", "0"},
                               {"classes.a.fuse.failures", "0"}, {"classes.a.fuse.cooldown", "1h"}});
  SinkHarness s(lib(), "http", on);
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  auto rejected = s.write({job("always", "503", "x", "a", "1"), job("always", "503", "x", "a", "2")});
  ASSERT_EQ(rejected.size(), 2u);
  EXPECT_DOUBLE_EQ(s.host().metric("http_sink_fuse_state{class=a}"), 1.0);
  rejected = s.write({ok_job("a", "held")});
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_NE(rejected[0].second.find("fuse open"), std::string::npos) << rejected[0].second;

  ASSERT_TRUE(s.reconfigure(lib(), "http", off).is_ok());
  EXPECT_DOUBLE_EQ(s.host().metric("http_sink_fuse_state{class=a}"), 0.0);
  std::vector<OwnedRecord> later;
  for (int i = 0; i < 5; ++i) later.push_back(ok_job("a", "after" + std::to_string(i)));
  EXPECT_TRUE(s.write(later).empty());
  EXPECT_EQ(with_prefix(srv.requests(), "/ok/x/x/a-after").size(), 5u);
}

// Two sinks (a pipeline and the one that reads its retry topic) sending class a to one
// API at rate 10, burst 2, at the same time: with a rate.group in common the server sees
// the class's rate once, not once per sink (QA: the example's two pipelines sent up to
// twice it); without one, each sink has its own bucket (the control: the test's load
// does reach twice the rate). A third sink of the group with another rate says it
// replaces the group's.
TEST(HttpSinkRate, SinksOfOneRateGroupShareTheClassRate) {
  auto run_pair = [](const std::string& group) {
    HttpTestServer srv;
    Pairs cfg = job_config(srv, {{"classes.a.rate", "10"}, {"classes.a.burst", "2"}});
    if (!group.empty()) cfg.push_back({"rate.group", group});
    SinkHarness one(lib(), "http", cfg), two(lib(), "http", cfg);
    EXPECT_TRUE(one.ok() && two.ok());
    auto records = [](const std::string& tag) {
      std::vector<OwnedRecord> in;
      for (int i = 0; i < 30; ++i) in.push_back(ok_job("a", tag + std::to_string(i)));
      return in;
    };
    std::thread other([&] { EXPECT_TRUE(two.write(records("t")).empty()); });
    EXPECT_TRUE(one.write(records("o")).empty());
    other.join();
    auto a = with_prefix(srv.requests(), "/ok/x/x/a-");
    EXPECT_EQ(a.size(), 60u);
    return max_in_window(a, 1.0);
  };
  EXPECT_LE(run_pair("api"), 13u) << "two sinks of one rate group went over the class's rate + burst";
  EXPECT_GE(run_pair(""), 17u) << "without a group each sink has its own rate (the control)";

  HttpTestServer srv;
  Pairs cfg = job_config(srv, {{"classes.a.rate", "10"}, {"rate.group", "api"}});
  SinkHarness first(lib(), "http", cfg);
  SinkHarness second(lib(), "http", job_config(srv, {{"classes.a.rate", "20"}, {"rate.group", "api"}}));
  ASSERT_TRUE(first.ok() && second.ok());
  bool said = false;
  for (const auto& [level, text] : second.host().logs)
    said = said || text.find("rate.group 'api' class 'a': rate 20/s") != std::string::npos;
  EXPECT_TRUE(said) << "no warning that the group's rate was replaced";
}

// A write() held by a full window (a class at 2/s, a window of 10, 80 records: 35 s of
// holding) gives way
// once the host is stopping: it returns, the round can commit what was delivered
// (completed() lowers the positions to the first open record, past the delivered ones),
// and the rest goes again at the next start. Held, a stop waited out the class (QA: rate
// 20 and 15,000 records: past shutdown.timeout, exit 3, nothing committed). The window
// gauge shows what waits while the in-flight gauge does not.
TEST(HttpSinkRate, AWriteHeldByAFullWindowGivesWayToAStop) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http",
                job_config(srv, {{"classes.a.rate", "2"}, {"classes.a.burst", "1"}, {"window.records", "10"}}));
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  std::vector<OwnedRecord> in;
  for (int i = 0; i < 80; ++i) {
    in.push_back(ok_job("a", std::to_string(i)));
    in.back().offset = i;
  }
  exactly::sdk::Status st;
  auto written = std::async(std::launch::async, [&] { return s.write_async(in, &st); });
  // Held until the stop.
  while (srv.requests().size() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(written.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "the full window did not hold the write";
  EXPECT_GE(s.host().metric("http_sink_window_records"), 10.0);
  s.host().ask_stop();
  ASSERT_EQ(written.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "write() kept waiting for room after the host asked to stop";
  EXPECT_TRUE(written.get().empty());
  EXPECT_TRUE(st.is_ok()) << st.message();
  std::vector<exactly::sdk::Partition> parts{exactly::sdk::Partition{0, "p0", "", 0, 80}};
  std::vector<OwnedRecord> late;
  ASSERT_TRUE(s.completed(parts, late).is_ok());
  const size_t delivered = with_prefix(srv.requests(), "/ok/x/x/a-").size();
  EXPECT_GE(parts[0].start_offset, 3) << "the delivered records' positions were not committable";
  EXPECT_LE(parts[0].start_offset, static_cast<int64_t>(delivered));
  EXPECT_LT(parts[0].start_offset, 80) << "records not sent counted as done";
}

TEST(HttpSinkRate, ReconfigureChangesAClassRateInPlace) {
  HttpTestServer srv;
  Pairs base = job_config(srv);
  Pairs fast = base, slow = base;
  fast.push_back({"classes.a.rate", "1000"});
  slow.push_back({"classes.a.rate", "5"});
  slow.push_back({"classes.a.burst", "1"});
  SinkHarness s(lib(), "http", fast);
  ASSERT_TRUE(s.ok());
  std::vector<OwnedRecord> in;
  for (int i = 0; i < 10; ++i) in.push_back(ok_job("a", "f" + std::to_string(i)));
  EXPECT_TRUE(s.write(in).empty());
  EXPECT_EQ(max_in_window(with_prefix(srv.requests(), "/ok/x/x/a-f"), 1.0), 10u);

  ASSERT_TRUE(s.reconfigure(lib(), "http", slow).is_ok());
  in.clear();
  for (int i = 0; i < 10; ++i) in.push_back(ok_job("a", "s" + std::to_string(i)));
  EXPECT_TRUE(s.write(in).empty());
  auto slowed = with_prefix(srv.requests(), "/ok/x/x/a-s");
  ASSERT_EQ(slowed.size(), 10u);
  EXPECT_LE(max_in_window(slowed, 1.0), 7u) << "the new rate was not applied";
  EXPECT_DOUBLE_EQ(s.host().metric("http_sink_class_rate{class=a}"), 5.0);

  // Anything but the classes needs a restart.
  Pairs moved = slow;
  moved[0].second = srv.base() + "/elsewhere";
  EXPECT_EQ(s.reconfigure(lib(), "http", moved).code(), EX_ERR_UNSUPPORTED);
}

TEST(HttpSinkRate, UnknownClassSettingIsAConfigError) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http", job_config(srv, {{"classes.a.speed", "5"}}));
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.create_status().key(), "classes.a.speed");
}

// Found by fuzz_http_config (tests/fuzz/crashers/http_config/): a duration past what an
// int64 of milliseconds holds was cast anyway (undefined), and NaN passed as a rate.
TEST(HttpSinkRate, OutOfRangeClassValuesAreConfigErrors) {
  HttpTestServer srv;
  for (auto [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"classes.a.fuse.cooldown", "21111111111111111111s"},
           {"classes.a.fuse.cooldown", "nan"},
           {"classes.a.rate", "nan"},
           {"classes.a.burst", "inf"},
           // 0 gave the default burst, a second's worth; 0 timeouts are libcurl's "none".
           {"classes.a.burst", "0"},
           {"classes.a.burst", "0.5"},
           {"request.timeout", "0"},
           {"connect.timeout", "0"}}) {
    auto st = exactly::testing::validate(lib(), EX_KIND_SINK, "http", job_config(srv, {{key, value}}));
    EXPECT_EQ(st.code(), EX_ERR_CONFIG) << key << "=" << value;
    EXPECT_EQ(st.key(), key);
    SinkHarness s(lib(), "http", job_config(srv, {{key, value}}));
    EXPECT_FALSE(s.ok()) << key << "=" << value;
  }
}

}  // namespace
