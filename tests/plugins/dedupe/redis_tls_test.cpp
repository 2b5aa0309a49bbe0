// dedupe-redis over TLS, against redis-server's own TLS port (tests/tools/redis-server.sh
// --tls makes a throwaway CA and certificates): claims work through it, and every
// wrong setting is a clear error naming its key, never a hang or a plaintext fallback.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "redis_fixture.hpp"

namespace dedupe_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class RedisTlsTest : public RedisDedupeTest {
 protected:
  Pairs tls_config(const RedisServer& r, Pairs extra = {}) const {
    // config() lets a later pair replace an earlier one of the same key.
    Pairs c = {{"tls", "true"}, {"tls.ca.file", (r.tls_dir() / "ca.pem").string()},
               {"redis.timeout", "2000"}};
    c.insert(c.end(), extra.begin(), extra.end());
    return config(c, {r.address()});
  }
  // The first call's status (the connection is made on the first batch).
  exactly::sdk::Status first_call(Pairs cfg) {
    auto& t = start(cfg);
    exactly::sdk::Status st;
    EXPECT_THAT(t.process({event("x", 0)}, &st).kept, IsEmpty());
    return st;
  }
};

TEST_F(RedisTlsTest, ClaimsGoThroughATlsPortAndReplaysAndDuplicatesAreTold) {
  RedisServer secure("tls", "", "", "tls");
  auto& t = start(tls_config(secure));
  EXPECT_THAT(t.process({event("a", 0), event("b", 1), event("a", 2)}).kept, ElementsAre(0u, 1u));
  EXPECT_THAT(t.process({event("a", 0), event("c", 3), event("b", 4)}).kept, ElementsAre(0u, 1u));
  ASSERT_TRUE(t.prepare_commit().is_ok());
  // The claims are on that server (read back over TLS by redis-cli).
  EXPECT_NE(secure.cli("dbsize"), "0");
  // A new connection after the server restarts is a new handshake.
  secure.kill9();
  secure.start();
  ASSERT_TRUE(t.abort().is_ok());
  exactly::sdk::Status st;
  t.process({event("d", 5)}, &st);
  if (!st.is_ok()) {  // the old connection's failure first, then a new one
    EXPECT_EQ(st.code(), EX_ERR_RETRIABLE) << st.message();
    ASSERT_TRUE(t.abort().is_ok());
  }
  EXPECT_THAT(t.process({event("d", 5), event("d", 6)}).kept, ElementsAre(0u));
}

TEST_F(RedisTlsTest, AClientCertificateIsSentWhenTheServerAsksForOne) {
  RedisServer secure("tls-clients", "", "", "tls-clients");
  const auto d = secure.tls_dir();
  auto& t = start(tls_config(secure, {{"tls.cert.file", (d / "client.pem").string()},
                                      {"tls.key.file", (d / "client.key").string()}}));
  EXPECT_THAT(t.process({event("a", 0), event("a", 1)}).kept, ElementsAre(0u));
  // Without one the server refuses. TLS 1.3 ends the handshake before the server has
  // checked, so the refusal comes after it: as the server's alert (a config error naming
  // the key), or, when the first command meets the closed connection before the alert
  // is read, as a reset (retriable), saying what the server asked for.
  for (int i = 0; i < 3; ++i) {
    exactly::sdk::Status st = first_call(tls_config(secure));
    EXPECT_THAT(st.message(), HasSubstr(secure.address()));
    if (st.code() == EX_ERR_CONFIG) {
      EXPECT_EQ(st.key(), "tls.cert.file") << st.message();
    } else {
      EXPECT_EQ(st.code(), EX_ERR_RETRIABLE) << st.message();
      EXPECT_THAT(st.message(), HasSubstr("asked for a client certificate and none is set"));
    }
  }
}

TEST_F(RedisTlsTest, AnUntrustedCertificateOrAWrongNameStopsNamingTheKey) {
  RedisServer secure("tls-trust", "", "", "tls");
  exactly::sdk::Status st = first_call(
      tls_config(secure, {{"tls.ca.file", (secure.tls_dir() / "other-ca.pem").string()}}));
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_EQ(st.key(), "tls.ca.file") << st.message();
  EXPECT_THAT(st.message(), HasSubstr("not trusted"));
  // The certificate names 127.0.0.1 and localhost, nothing else.
  st = first_call(tls_config(secure, {{"tls.server.name", "redis.example.com"}}));
  EXPECT_EQ(st.code(), EX_ERR_CONFIG) << st.message();
  EXPECT_EQ(st.key(), "tls.server.name") << st.message();
  // ...and a name it carries is accepted in place of the address.
  auto& t = start(tls_config(secure, {{"tls.server.name", "localhost"}}));
  EXPECT_THAT(t.process({event("a", 0)}).kept, ElementsAre(0u));
}

TEST_F(RedisTlsTest, TlsAgainstAPlaintextPortAndPlaintextAgainstATlsPortAreToldApart) {
  // redis_ is this test's plaintext server. It reads the client's hello as an inline
  // command: when the hello holds a newline byte it answers an error, which is no TLS
  // (a config error naming `tls`); when not, it waits for one, and the handshake runs
  // into redis.timeout (retriable: a slow server looks the same), saying what it may be.
  for (int i = 0; i < 3; ++i) {
    Pairs to_plain = config({{"tls", "true"}, {"redis.timeout", "1000"}});
    exactly::sdk::Status st = first_call(to_plain);
    if (st.code() == EX_ERR_CONFIG) {
      EXPECT_EQ(st.key(), "tls") << st.message();
      EXPECT_THAT(st.message(), HasSubstr("does not speak TLS"));
    } else {
      EXPECT_EQ(st.code(), EX_ERR_RETRIABLE) << st.message();
      EXPECT_THAT(st.message(), HasSubstr("a server without TLS on this port does not answer"));
    }
  }

  RedisServer secure("tls-plain", "", "", "tls");
  exactly::sdk::Status st = first_call(config({{"redis.timeout", "2000"}}, {secure.address()}));
  EXPECT_EQ(st.code(), EX_ERR_RETRIABLE) << st.message();
  EXPECT_THAT(st.message(), HasSubstr("set tls: true"));
}

TEST_F(RedisTlsTest, UnreadableFilesAndTlsKeysWithoutTlsAreConfigErrorsAtCreate) {
  RedisServer secure("tls-files", "", "", "tls");
  const auto d = secure.tls_dir();
  struct Case {
    Pairs extra;
    std::string key;
  };
  const std::vector<Case> cases = {
      {{{"tls.ca.file", "/nonexistent/ca.pem"}}, "tls.ca.file"},
      {{{"tls.ca.file", (d / "server.key").string()}}, "tls.ca.file"},
      {{{"tls.cert.file", (d / "client.pem").string()}}, "tls.key.file"},  // the missing one
      {{{"tls.cert.file", (d / "client.pem").string()}, {"tls.key.file", (d / "server.key").string()}},
       "tls.key.file"},
  };
  for (const auto& c : cases) {
    TransformHarness t(library(), "dedupe-redis", tls_config(secure, c.extra));
    EXPECT_FALSE(t.ok()) << c.key;
    EXPECT_EQ(t.create_status().code(), EX_ERR_CONFIG) << t.create_status().message();
    EXPECT_EQ(t.create_status().key(), c.key) << t.create_status().message();
  }
  // A TLS setting without tls: true would mean a plaintext connection: refused.
  TransformHarness plain(library(), "dedupe-redis",
                         config({{"tls.server.name", "localhost"}}, {secure.address()}));
  EXPECT_EQ(plain.create_status().code(), EX_ERR_CONFIG) << plain.create_status().message();
  EXPECT_EQ(plain.create_status().key(), "tls.server.name") << plain.create_status().message();
  EXPECT_THAT(plain.create_status().message(), HasSubstr("needs tls: true"));
}

}  // namespace
}  // namespace dedupe_test
