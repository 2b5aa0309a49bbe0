#include "topic_limit.hpp"

#include "rdkafka_common.hpp"

#include <algorithm>
#include <cstdlib>

namespace exactly::kafka {

int64_t topic_max_message_bytes(rd_kafka_t* rk, const std::string& topic, int64_t timeout_ms) {
  std::string value;
  if (!describe_topic_config(rk, topic, "max.message.bytes", timeout_ms, "describing topic " + topic, value))
    return -1;
  const long long v = std::atoll(value.c_str());
  return v > 0 ? v : -1;
}

int64_t batch_bytes_for(int64_t limit) { return std::max<int64_t>(1000, limit - 512); }
int64_t record_bytes_for(int64_t limit) { return std::max<int64_t>(1000, limit - 128); }

}  // namespace exactly::kafka
