#include "log_level.hpp"

#include <cstring>
#include <string_view>

namespace exactly::kafka {

ex_log_level host_log_level(int syslog_level) {
  return syslog_level <= 3 ? EX_LOG_ERROR : syslog_level == 4 ? EX_LOG_WARN
                                        : syslog_level <= 6 ? EX_LOG_INFO
                                                            : EX_LOG_DEBUG;
}

ex_log_level librdkafka_line_level(int syslog_level, const char* facility, const char* text) {
  const ex_log_level level = host_log_level(syslog_level);
  if (facility == nullptr || text == nullptr) return level;
  const std::string_view t(text);
  // A broker that cannot be reached or dropped a connection: librdkafka retries, and in a
  // cluster of several brokers one down is routine (a rolling restart). A warning, as
  // Kafka's Java clients say it; a refused login or certificate stays an error.
  if (level == EX_LOG_ERROR && std::strcmp(facility, "FAIL") == 0 &&
      t.find("SSL") == std::string_view::npos && t.find("SASL") == std::string_view::npos &&
      t.find("uthenticat") == std::string_view::npos)
    return EX_LOG_WARN;
  if (level != EX_LOG_WARN) return level;
  const bool retrying = t.ends_with(": retrying");
  if (std::strcmp(facility, "GETPID") == 0 && retrying &&
      (t.find("Coordinator load in progress") != std::string_view::npos ||
       t.find("another concurrent operation on the same transaction") != std::string_view::npos))
    return EX_LOG_INFO;
  return level;
}

}  // namespace exactly::kafka
