// librdkafka's suspicion of security.protocol, kept per broker until that broker's next
// FAIL line says something else: a broker that shut down closed its connections with the
// same words a TLS listener uses on a plaintext client, and a later "cannot reach" blamed
// security.protocol for a broker that was only stopped (seen in BrokerOutage's log).
#include <gtest/gtest.h>

#include "protocol_suspicion.hpp"

using exactly::kafka::ProtocolSuspicion;

namespace {
const char* kShutDown =
    "[thrd:127.0.0.1:19092/bootstrap]: 127.0.0.1:19092/1: Disconnected: verify that security.protocol is "
    "correctly configured, broker might require SASL authentication (after 332ms in state UP)";
const char* kRefused =
    "[thrd:127.0.0.1:19092/bootstrap]: 127.0.0.1:19092/1: Connect to ipv4#127.0.0.1:19092 failed: "
    "Connection refused (after 0ms in state CONNECT)";
const char* kTls =
    "[thrd:127.0.0.1:19093/bootstrap]: 127.0.0.1:19093/bootstrap: Disconnected while requesting ApiVersion: "
    "might be caused by incorrect security.protocol configuration (connecting to a SSL listener?) or broker "
    "version is < 0.10 (see api.version.request) (after 2ms in state APIVERSION_QUERY)";
}  // namespace

TEST(ProtocolSuspicion, ABrokerThatIsRefusedAfterwardsIsNoLongerSuspected) {
  ProtocolSuspicion s;
  EXPECT_EQ(s.current(), "");
  s.note("FAIL", kShutDown);
  EXPECT_EQ(s.current(), kShutDown);
  s.note("FAIL", kRefused);
  EXPECT_EQ(s.current(), "") << "the broker is down, not speaking another protocol";
}

TEST(ProtocolSuspicion, AnotherBrokersFailureDoesNotClearTheSuspicion) {
  ProtocolSuspicion s;
  s.note("FAIL", kTls);
  s.note("FAIL", kRefused);  // 19092 down beside the TLS listener at 19093
  EXPECT_EQ(s.current(), kTls);
  s.note("FAIL", kShutDown);
  EXPECT_EQ(s.current(), kShutDown) << "the latest suspicious line";
  s.note("FAIL", kRefused);
  EXPECT_EQ(s.current(), kTls) << "19093 is still suspected";
  s.note("CONNECT", "[thrd:127.0.0.1:19093/bootstrap]: 127.0.0.1:19093/bootstrap: Connecting to ipv4#127.0.0.1:19093");
  EXPECT_EQ(s.current(), kTls) << "only a FAIL line clears a broker's suspicion";
}
