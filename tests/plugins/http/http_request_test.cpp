// What a request looks like: templated URL, body, headers, idempotency key, method, and
// that many are in flight at once.
#include <set>

#include "http_sink_fixture.hpp"

namespace {

using namespace http_test;

TEST(HttpSink, TemplatedUrlHeadersBodyAndIdempotencyKey) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http",
                {{"url", srv.base() + "/orders/{/order/id}/{header:tenant}/{key}"},
                 {"method", "PUT"},
                 {"headers.X-Static", "yes"},
                 {"headers.X-Empty", ""},
                 {"idempotency.key", "/order/id"}});
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  ASSERT_TRUE(s.open().is_ok());
  OwnedRecord r;
  r.key = "k1";
  r.value = R"({"order":{"id":"a b/c"},"n":1})";
  r.headers = {{"tenant", "acme"}, {"X-Trace", "t1"}};
  auto rejected = s.write({r});
  EXPECT_TRUE(rejected.empty()) << rejected[0].second;
  auto seen = srv.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "PUT");
  // A value is one path segment however many slashes it has.
  EXPECT_EQ(seen[0].path, "/orders/a%20b%2Fc/acme/k1");
  EXPECT_EQ(seen[0].body, r.value);
  EXPECT_EQ(seen[0].header("idempotency-key"), "a b/c");
  EXPECT_EQ(seen[0].header("x-static"), "yes");
  // A configured header with an empty value is sent (libcurl dropped "X-Empty:").
  EXPECT_EQ(seen[0].headers.count("x-empty"), 1u);
  EXPECT_EQ(seen[0].header("x-empty"), "");
  EXPECT_EQ(seen[0].header("x-trace"), "t1");
  EXPECT_EQ(seen[0].header("tenant"), "acme");
  EXPECT_EQ(seen[0].header("content-type"), "application/json");
  bool stored = true;
  EXPECT_TRUE(s.prepare_commit().is_ok());
  EXPECT_TRUE(s.commit(std::nullopt, &stored).is_ok());
  EXPECT_FALSE(stored) << "the http sink cannot keep source positions";
}

TEST(HttpSink, MissingTemplateFieldOrKeyIsARecordErrorNotARequest) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http", job_config(srv));
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  OwnedRecord no_id;
  no_id.value = R"({"mode":"ok","a1":"x","a2":"x","cls":"c"})";
  OwnedRecord not_json;
  not_json.value = "not json";
  auto rejected = s.write({no_id, ok_job("c", "1"), not_json});
  ASSERT_EQ(rejected.size(), 2u);
  EXPECT_EQ(rejected[0].first, 0u);
  EXPECT_NE(rejected[0].second.find("/id"), std::string::npos) << rejected[0].second;
  EXPECT_EQ(rejected[1].first, 2u);
  EXPECT_EQ(srv.requests().size(), 1u);
}

TEST(HttpSink, ConfiguredHeadersWinAndBadRecordHeadersAreRecordErrors) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http", job_config(srv, {{"headers.Authorization", "Bearer t"}}));
  ASSERT_TRUE(s.ok());
  auto a = ok_job("c", "1");
  a.headers = {{"Authorization", "forged"}, {"Idempotency-Key", "forged"}};
  auto b = ok_job("c", "2");
  b.headers = {{"X-Evil", "v\r\nX-Injected: 1"}};
  auto rejected = s.write({a, b});
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].first, 1u);
  auto seen = srv.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].header("authorization"), "Bearer t");
  EXPECT_EQ(seen[0].header("idempotency-key"), "1");
}

TEST(HttpSink, ExactlyOnceDeliveryIsRefusedAtCreate) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http", job_config(srv, {{"delivery", "exactly_once"}}));
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.create_status().key(), "delivery");
}

// Each request sleeps 600 ms at the server: with 20 in flight they all arrive before the
// first answer; with 1 in flight each arrives after the previous answer. (The margins
// leave room for a loaded CI machine.)
TEST(HttpSink, ManyRequestsInFlight) {
  HttpTestServer srv;
  std::vector<OwnedRecord> in;
  for (int i = 0; i < 20; ++i) in.push_back(job("sleep", "600", "1000", "p", std::to_string(i)));
  {
    SinkHarness s(lib(), "http", job_config(srv, {{"max.in.flight", "20"}}));
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(s.write(in).empty());
  }
  auto seen = srv.requests();
  ASSERT_EQ(seen.size(), 20u);
  EXPECT_EQ(max_in_window(seen, 0.5), 20u) << "requests did not overlap";

  HttpTestServer one;
  {
    SinkHarness s(lib(), "http", job_config(one, {{"max.in.flight", "1"}}));
    ASSERT_TRUE(s.ok());
    in.resize(5);
    EXPECT_TRUE(s.write(in).empty());
  }
  EXPECT_EQ(max_in_window(one.requests(), 0.5), 1u) << "max.in.flight 1 overlapped";
}

}  // namespace

namespace {

using namespace http_test;

// HTTPS against a self-signed certificate: refused while verifying without it (a
// connection error, retried, then a record error), delivered with tls.ca.file, and
// delivered with tls.verify: false.
TEST(HttpSinkTls, CaFileAndVerifyOff) {
  HttpTestServer srv(/*tls=*/true);
  {
    SinkHarness s(lib(), "http", job_config(srv, {{"retry.max", "1"}}));
    ASSERT_TRUE(s.ok());
    auto rejected = s.write({ok_job("c", "untrusted")});
    ASSERT_EQ(rejected.size(), 1u);
    EXPECT_NE(rejected[0].second.find("connection error"), std::string::npos) << rejected[0].second;
  }
  {
    SinkHarness s(lib(), "http", job_config(srv, {{"tls.ca.file", srv.cert().string()}}));
    ASSERT_TRUE(s.ok());
    auto rejected = s.write({ok_job("c", "trusted")});
    EXPECT_TRUE(rejected.empty()) << rejected[0].second;
  }
  {
    SinkHarness s(lib(), "http", job_config(srv, {{"tls.verify", "false"}}));
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(s.write({ok_job("c", "unverified")}).empty());
  }
  auto seen = srv.requests();
  EXPECT_EQ(with_prefix(seen, "/ok/x/x/c-untrusted").size(), 0u);
  EXPECT_EQ(with_prefix(seen, "/ok/x/x/c-trusted").size(), 1u);
  EXPECT_EQ(with_prefix(seen, "/ok/x/x/c-unverified").size(), 1u);
}

}  // namespace

namespace {

using namespace http_test;

// One request at a time over one kept-alive connection, across batches too.
TEST(HttpSink, ConnectionsAreKeptAlive) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http", job_config(srv, {{"max.in.flight", "1"}}));
  ASSERT_TRUE(s.ok());
  for (int batch = 0; batch < 2; ++batch) {
    std::vector<OwnedRecord> in;
    for (int i = 0; i < 20; ++i) in.push_back(ok_job("c", std::to_string(batch * 100 + i)));
    EXPECT_TRUE(s.write(in).empty());
  }
  std::set<int> ports;
  auto seen = srv.requests();
  for (auto& r : seen) ports.insert(r.client_port);
  EXPECT_EQ(seen.size(), 40u);
  EXPECT_EQ(ports.size(), 1u) << "a new connection per request";
}

}  // namespace
