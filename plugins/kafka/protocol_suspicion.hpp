#pragma once
// librdkafka's suspicion that security.protocol is wrong, kept per broker (plain logic,
// no librdkafka needed). It says so in a FAIL line when a connection closes soon after
// it opened ("Disconnected: verify that security.protocol is correctly configured ...",
// "Disconnected while requesting ApiVersion: might be caused by incorrect
// security.protocol ..."): what a TLS or SASL listener does to a plaintext client, but
// also what a broker that shuts down does to every client. So a broker's suspicion lasts
// only until its next FAIL line says something else (connection refused: it is down, not
// speaking another protocol); "cannot reach" then no longer blames security.protocol for
// a broker that was merely stopped.
#include <map>
#include <string>

namespace exactly::kafka {

class ProtocolSuspicion {
 public:
  // Every librdkafka log line: one that suspects security.protocol (of any facility) is
  // kept for its broker; a FAIL line that does not clears its broker; others change nothing.
  void note(const char* facility, const char* text);
  // The latest suspicious line of a broker still suspected, or "".
  std::string current() const;

 private:
  struct Line {
    long long seq;
    std::string text;
  };
  std::map<std::string, Line> by_broker_;
  long long seq_ = 0;
};

}  // namespace exactly::kafka
