#include "protocol_suspicion.hpp"

#include <cstring>

namespace exactly::kafka {
namespace {

// "[thrd:127.0.0.1:9092/bootstrap]: 127.0.0.1:9092/1: Disconnected: ..." -> "127.0.0.1:9092/1":
// the broker the line is about (the thread name differs between its connections).
std::string broker_of(const char* text) {
  const char* from = std::strstr(text, "]: ");
  from = from != nullptr ? from + 3 : text;
  const char* end = std::strstr(from, ": ");
  return end != nullptr ? std::string(from, end) : std::string();
}

}  // namespace

void ProtocolSuspicion::note(const char* facility, const char* text) {
  if (std::strstr(text, "security.protocol") != nullptr)
    by_broker_[broker_of(text)] = Line{++seq_, text};
  else if (std::strcmp(facility, "FAIL") == 0)  // that broker's connection fails otherwise now
    by_broker_.erase(broker_of(text));
}

std::string ProtocolSuspicion::current() const {
  const Line* latest = nullptr;
  for (const auto& [broker, line] : by_broker_)
    if (latest == nullptr || line.seq > latest->seq) latest = &line;
  return latest != nullptr ? latest->text : std::string();
}

}  // namespace exactly::kafka
