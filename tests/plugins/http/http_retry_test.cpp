// Outcomes: retriable failures retried inline, everything else a record error with the
// status and response, never lost.
#include "http_sink_fixture.hpp"

#include <set>

namespace {

using namespace http_test;

TEST(HttpSinkRetry, ServerErrorThenSuccessIsRetriedWithTheSameKey) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http", job_config(srv, {{"retry.max", "3"}}));
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  auto rejected = s.write({job("fail", "2", "503", "c", "r1"), job("fail", "1", "500", "c", "r2")});
  EXPECT_TRUE(rejected.empty()) << rejected[0].second;
  auto seen = srv.requests();
  auto r1 = with_prefix(seen, "/fail/2/503/c-r1"), r2 = with_prefix(seen, "/fail/1/500/c-r2");
  ASSERT_EQ(r1.size(), 3u);
  ASSERT_EQ(r2.size(), 2u);
  EXPECT_EQ(r1[2].status, 200);
  for (auto& r : r1) EXPECT_EQ(r.header("idempotency-key"), "r1");
  EXPECT_GT(s.host().metric("http_sink_retries_total{class=default}"), 2.5);
}

// A retry goes out on a fresh connection: on a kept-alive one the server had closed,
// libcurl would send it again by itself, uncounted. The first attempt may reuse one.
TEST(HttpSinkRetry, ARetryGoesOutOnAFreshConnection) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http", job_config(srv, {{"retry.max", "3"}, {"max.in.flight", "1"}}));
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  auto rejected = s.write({ok_job("c", "warm"), job("fail", "2", "500", "c", "r1")});
  EXPECT_TRUE(rejected.empty()) << rejected[0].second;
  auto seen = srv.requests();
  auto warm = with_prefix(seen, "/ok/x/x/c-warm"), r1 = with_prefix(seen, "/fail/2/500/c-r1");
  ASSERT_EQ(warm.size(), 1u);
  ASSERT_EQ(r1.size(), 3u);
  EXPECT_EQ(r1[0].client_port, warm[0].client_port) << "the first attempt did not reuse the connection";
  std::set<int> ports = {warm[0].client_port};
  for (size_t i = 1; i < r1.size(); ++i)
    EXPECT_TRUE(ports.insert(r1[i].client_port).second) << "retry " << i << " reused a connection";
}

// A retry that is due goes ahead of its class's queue: behind the backlog of a
// rate-limited class it waited seconds past retry.backoff.max, and its record held the
// committed position back all that time (a crash then replayed everything after it).
TEST(HttpSinkRetry, ADueRetryGoesAheadOfItsRateLimitedClassesBacklog) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http", job_config(srv, {{"retry.max", "3"},
                                                {"classes.a.rate", "20"},
                                                {"classes.a.burst", "1"}}));
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  std::vector<OwnedRecord> in = {job("fail", "1", "500", "a", "r0")};
  for (int i = 0; i < 40; ++i) in.push_back(ok_job("a", std::to_string(i)));  // 2 s at 20/s
  EXPECT_TRUE(s.write(in).empty());
  auto seen = srv.requests();
  auto retried = with_prefix(seen, "/fail/1/500/a-r0"), rest = with_prefix(seen, "/ok/x/x/a-");
  ASSERT_EQ(retried.size(), 2u);
  ASSERT_EQ(rest.size(), 40u);
  EXPECT_EQ(retried[1].status, 200);
  size_t sent_before_retry = 0;
  for (auto& r : rest) sent_before_retry += r.t < retried[1].t ? 1 : 0;
  EXPECT_LE(sent_before_retry, 5u) << "the retry waited behind its class's backlog";
}

// An answer that is not HTTP (a proxy or server sending garbage) is libcurl's
// "unsupported protocol", like a bad URL scheme; it is retried, not failed for good.
TEST(HttpSinkRetry, AnAnswerThatIsNotHttpIsRetried) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http", job_config(srv, {{"retry.max", "3"}}));
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  auto rejected = s.write({job("garbage", "1", "x", "c", "g1")});
  EXPECT_TRUE(rejected.empty()) << rejected[0].second;
  auto seen = with_prefix(srv.requests(), "/garbage/1/x/c-g1");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].status, 200);
}

// The reason a record failed is logged, put in its dead-letter header and shown in the
// summary: the URL there keeps no password and no credential-like query values.
TEST(HttpSinkRetry, TheFailureReasonsUrlHidesCredentials) {
  HttpTestServer srv;
  std::string base = srv.base();
  base.insert(base.find("://") + 3, "admin:hunter2pass@");
  SinkHarness s(lib(), "http",
                {{"url", base + "/always/404/{/cls}-{/id}?api_key=s3cr3tvalue&page=2"},
                 {"idempotency.key", "/id"}});
  ASSERT_TRUE(s.ok()) << s.create_status().message();
  auto rejected = s.write({ok_job("c", "1")});
  ASSERT_EQ(rejected.size(), 1u);
  // What the server answered is quoted as it came (this one echoes the path).
  const std::string why = rejected[0].second.substr(0, rejected[0].second.find("; response:"));
  EXPECT_EQ(why.find("hunter2pass"), std::string::npos) << why;
  EXPECT_EQ(why.find("s3cr3tvalue"), std::string::npos) << why;
  EXPECT_NE(why.find("admin:***@"), std::string::npos) << why;
  EXPECT_NE(why.find("?api_key=***&page=2"), std::string::npos) << why;
  ASSERT_EQ(srv.requests().size(), 1u);  // the request itself went out with them
  EXPECT_NE(srv.requests()[0].path.find("api_key=s3cr3tvalue"), std::string::npos);
}

TEST(HttpSinkRetry, ClientErrorIsARecordErrorWithStatusAndResponse) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http", job_config(srv, {{"retry.max", "3"}}));
  ASSERT_TRUE(s.ok());
  auto rejected = s.write({ok_job("c", "1"), job("always", "404", "x", "c", "2")});
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].first, 1u);
  const std::string& why = rejected[0].second;
  EXPECT_NE(why.find("http 404 after 1 attempt(s)"), std::string::npos) << why;
  EXPECT_NE(why.find("response: refused /always/404/x/c-2"), std::string::npos) << why;
  EXPECT_EQ(with_prefix(srv.requests(), "/always/").size(), 1u) << "a 4xx was retried";
}

TEST(HttpSinkRetry, RetriesExhaustedIsARecordErrorAndTheResponseIsTruncated) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http",
                job_config(srv, {{"retry.max", "2"}, {"response.body.max", "10"}}));
  ASSERT_TRUE(s.ok());
  auto rejected = s.write({job("always", "500", "x", "c", "1")});
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_NE(rejected[0].second.find("http 500 after 3 attempt(s)"), std::string::npos)
      << rejected[0].second;
  EXPECT_NE(rejected[0].second.find("response: refused /a"), std::string::npos);
  EXPECT_EQ(rejected[0].second.find("refused /al"), std::string::npos) << "not truncated";
  EXPECT_EQ(srv.requests().size(), 3u);
  EXPECT_DOUBLE_EQ(s.host().metric("http_sink_failures_total{class=default}"), 1.0);
}

// One record the server answers once with 429 and `Retry-After: <retry_after>`, then 200:
// the seconds between the two attempts (-1 when it did not go that way).
double throttled_retry_gap(const std::string& retry_after, Pairs extra = {}) {
  HttpTestServer srv;
  extra.emplace_back("retry.max", "3");
  SinkHarness s(lib(), "http", job_config(srv, extra));
  EXPECT_TRUE(s.ok()) << s.create_status().message();
  if (!s.ok()) return -1;
  EXPECT_TRUE(s.write({job("throttle", "1", retry_after, "c", "1")}).empty());
  auto seen = srv.requests();
  EXPECT_EQ(seen.size(), 2u);
  if (seen.size() != 2) return -1;
  EXPECT_EQ(seen[0].status, 429);
  EXPECT_EQ(seen[1].status, 200);
  return seen[1].t - seen[0].t;
}

TEST(HttpSinkRetry, TooManyRequestsHonoursRetryAfter) {
  // The backoff alone would have retried after 10-50 ms.
  EXPECT_GE(throttled_retry_gap("1"), 0.9) << "Retry-After: 1 not honoured";
}

// A hostile or broken server's Retry-After near 2^63 seconds: converting it to ms
// overflowed (undefined behaviour; in practice a negative wait, so the backoff of 10-50
// ms instead). It is retry.after.max that bounds the wait.
TEST(HttpSinkRetry, AHugeRetryAfterWaitsRetryAfterMax) {
  EXPECT_GE(throttled_retry_gap("9000000000000000000", {{"retry.after.max", "400"}}), 0.35)
      << "a huge Retry-After did not wait retry.after.max";
  // Past what libcurl parses (it answers 0, as for no header): still the longest wait.
  EXPECT_GE(throttled_retry_gap("99999999999999999999", {{"retry.after.max", "400"}}), 0.35)
      << "a 20-digit Retry-After was taken for none";
}

TEST(HttpSinkRetry, TimeoutIsRetried) {
  HttpTestServer srv;
  SinkHarness s(lib(), "http", job_config(srv, {{"retry.max", "2"}, {"request.timeout", "300"}}));
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s.write({job("sleep", "1500", "1", "c", "1")}).empty());
  auto seen = srv.requests();
  // The server logs the timed-out request when its sleep ends, after the retry.
  for (int i = 0; i < 40 && seen.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    seen = srv.requests();
  }
  // Logged when its sleep ends, the timed-out attempt shows up after the retry.
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].header("idempotency-key"), seen[1].header("idempotency-key"));
}

TEST(HttpSinkRetry, ConnectionRefusedIsRetriedThenARecordError) {
  // A port nobody listens on: bind one, note it, close it.
  int port = 0;
  {
    HttpTestServer tmp;
    port = tmp.port();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  SinkHarness s(lib(), "http",
                {{"url", "http://127.0.0.1:" + std::to_string(port) + "/x"},
                 {"retry.max", "2"},
                 {"retry.backoff.initial", "10"}});
  ASSERT_TRUE(s.ok());
  auto rejected = s.write({ok_job("c", "1")});
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_NE(rejected[0].second.find("connection error"), std::string::npos) << rejected[0].second;
  EXPECT_NE(rejected[0].second.find("after 3 attempt(s)"), std::string::npos) << rejected[0].second;
}

}  // namespace
