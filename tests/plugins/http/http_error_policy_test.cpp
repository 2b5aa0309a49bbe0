// Record errors of the http sink through the real host: with dead-letter every refused
// record lands in the dead-letter sink (none lost); with stop the pipeline stops and says
// which record and which HTTP status.
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "http_sink_fixture.hpp"

using namespace exactly::test;

namespace {

std::string yaml(const HttpTestServer& srv, const fs::path& dir, const std::string& policy) {
  std::string errors =
      policy == "dead-letter"
          ? "    errors: { policy: dead-letter, dead-letter: { plugin: file, config: { path: " +
                (dir / "dlq.jsonl").string() + " } } }\n"
          : "    errors: { policy: stop }\n";
  return "pipelines:\n"
         "  - name: refused\n"
         "    delivery: at_least_once\n" + errors +
         "    source: { plugin: generator, config: { count: 50, duplicate.ratio: 0 } }\n"
         "    sink:\n      plugin: http\n      config:\n"
         "        url: " + srv.base() + "/always/404/x/{/seq}\n"
         "        idempotency.key: /messageId\n";
}

TEST(HttpSinkErrorPolicy, DeadLetterKeepsEveryRefusedRecord) {
  HttpTestServer srv;
  fs::path dir = temp_dir("http-dlq");
  write_file(dir / "p.yaml", yaml(srv, dir, "dead-letter"));
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(lines_of(read_file(dir / "dlq.jsonl")).size(), 50u) << r.out << r.err;
  EXPECT_EQ(srv.requests().size(), 50u) << "a 404 was retried or a record not sent";
  // The summary's row: refused late (by the completion window), none of them is "out"
  // (it said "out 50 ... rejected 50").
  std::istringstream table(r.out);
  std::string line;
  std::vector<std::string> row;
  while (std::getline(table, line))
    if (line.rfind("refused ", 0) == 0) {
      std::istringstream cells(line);
      for (std::string c; cells >> c;) row.push_back(c);
    }
  ASSERT_GE(row.size(), 6u) << r.out;
  EXPECT_EQ(row[2], "50") << r.out;  // in
  EXPECT_EQ(row[3], "0") << r.out;   // out
  EXPECT_EQ(row[5], "50") << r.out;  // rejected
}

TEST(HttpSinkErrorPolicy, StopNamesTheRecordAndTheStatus) {
  HttpTestServer srv;
  fs::path dir = temp_dir("http-stop");
  write_file(dir / "p.yaml", yaml(srv, dir, "stop"));
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  std::string all = r.out + r.err;
  EXPECT_NE(all.find("http 404 after 1 attempt(s)"), std::string::npos) << all;
  EXPECT_NE(all.find("errors.policy: stop"), std::string::npos) << all;
}

// A server that quotes the request's headers in its refusal: the credentials the sink
// sent (named by their header: Authorization, X-Api-Key, Cookie) are masked in the
// stop message that quotes the answer, as a password is.
TEST(HttpSinkErrorPolicy, CredentialHeadersQuotedInAnAnswerAreMasked) {
  HttpTestServer srv;
  fs::path dir = temp_dir("http-echo");
  const std::string bearer = "Bearer tok-4f9a-credential", api = "key-77c1-credential",
                    cookie = "session=c00k1e-credential";
  std::string y = yaml(srv, dir, "stop");
  const std::string url = "/always/404/x/";
  ASSERT_NE(y.find(url), std::string::npos);
  y.replace(y.find(url), url.size(), "/echo/401/x/");
  y += "        headers: { Authorization: \"" + bearer + "\", X-Api-Key: " + api +
       ", Cookie: \"" + cookie + "\", X-Trace: visible-trace }\n";
  write_file(dir / "p.yaml", y);
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  std::string all = r.out + r.err;
  EXPECT_NE(r.exit_code, 0) << all;
  // The answer is quoted, with the header that is no credential as it was sent.
  EXPECT_NE(all.find("http 401 after 1 attempt(s)"), std::string::npos) << all;
  EXPECT_NE(all.find("X-Trace: visible-trace"), std::string::npos) << all;
  EXPECT_NE(all.find("Authorization: ****"), std::string::npos) << all;
  for (const auto& s : {std::string("tok-4f9a"), api, cookie}) EXPECT_EQ(all.find(s), std::string::npos) << s;
  // The server got the real values.
  auto reqs = srv.requests();
  ASSERT_FALSE(reqs.empty());
  EXPECT_EQ(reqs.front().header("authorization"), bearer);
  EXPECT_EQ(reqs.front().header("x-api-key"), api);
}

}  // namespace
