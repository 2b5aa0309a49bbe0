#include "topic_limit.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>

namespace exactly::kafka {

namespace {
int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

int64_t topic_max_message_bytes(rd_kafka_t* rk, const std::string& topic, int64_t timeout_ms) {
  rd_kafka_ConfigResource_t* r = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  std::unique_ptr<rd_kafka_queue_t, void (*)(rd_kafka_queue_t*)> q(rd_kafka_queue_new(rk), rd_kafka_queue_destroy);
  rd_kafka_DescribeConfigs(rk, &r, 1, nullptr, q.get());
  rd_kafka_ConfigResource_destroy(r);
  const int64_t deadline = steady_ms() + timeout_ms;
  while (steady_ms() < deadline) {
    std::unique_ptr<rd_kafka_event_t, void (*)(rd_kafka_event_t*)> ev(rd_kafka_queue_poll(q.get(), 200),
                                                                       rd_kafka_event_destroy);
    if (!ev || rd_kafka_event_type(ev.get()) != RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT) continue;
    if (rd_kafka_event_error(ev.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) return -1;
    size_t n = 0;
    const rd_kafka_ConfigResource_t** res =
        rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev.get()), &n);
    for (size_t i = 0; i < n; ++i) {
      if (rd_kafka_ConfigResource_error(res[i]) != RD_KAFKA_RESP_ERR_NO_ERROR) return -1;
      size_t cn = 0;
      const rd_kafka_ConfigEntry_t** entries = rd_kafka_ConfigResource_configs(res[i], &cn);
      for (size_t j = 0; j < cn; ++j) {
        const char* name = rd_kafka_ConfigEntry_name(entries[j]);
        const char* value = rd_kafka_ConfigEntry_value(entries[j]);
        if (name != nullptr && value != nullptr && std::string(name) == "max.message.bytes") {
          const long long v = std::atoll(value);
          return v > 0 ? v : -1;
        }
      }
    }
    return -1;
  }
  return -1;
}

int64_t batch_bytes_for(int64_t limit) { return std::max<int64_t>(1000, limit - 512); }
int64_t record_bytes_for(int64_t limit) { return std::max<int64_t>(1000, limit - 128); }

}  // namespace exactly::kafka
