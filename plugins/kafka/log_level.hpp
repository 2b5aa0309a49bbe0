#pragma once
// The host log level of a librdkafka log line (no librdkafka needed: plain logic).
#include <exactly/plugin_abi.h>

namespace exactly::kafka {

// librdkafka's syslog level (0-3 error, 4 warning, 5-6 notice/info, 7 debug) as the
// host's, for every handle whose log goes to the host.
ex_log_level host_log_level(int syslog_level);

// As host_log_level, except for warnings librdkafka gives while it retries a state the
// plugin waits through anyway (bounded by the sink's open.timeout, which reports it):
// a transactional producer's PID while the coordinator loads, or while it aborts the
// transaction of a producer with the same id that died (every restart after a kill -9
// warned so, QA). Those are said at info. And a broker's connection failing (FAIL:
// refused, reset, timed out) is a warning, not an error: librdkafka retries it, and one
// broker of several down is routine; a FAIL that names SSL, SASL or authentication
// stays an error.
ex_log_level librdkafka_line_level(int syslog_level, const char* facility, const char* text);

}  // namespace exactly::kafka
