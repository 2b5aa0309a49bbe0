// The output topic's own record-batch limit (its max.message.bytes) against the
// producer's batches. The broker refuses a whole batch over it; librdkafka does not split
// a refused batch (the Java producer does), so a topic set below librdkafka's 1 MB
// batches failed every transaction that carried a full batch, and the pipeline replayed
// the same round for ever (1 KB records into a topic of max.message.bytes=100000,
// 2026-12-06). The sink reads the limit when it opens and sizes its batches and records
// to it: a record that cannot fit goes to the error policy, like one over librdkafka's
// own limit.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <string>

namespace exactly::kafka {

// The topic's max.message.bytes as the cluster reports it (the broker's default when the
// topic sets none), or -1 when it cannot tell within `timeout_ms` (an old broker, no
// DescribeConfigs rights): the sink then keeps librdkafka's limits.
int64_t topic_max_message_bytes(rd_kafka_t* rk, const std::string& topic, int64_t timeout_ms);

// What the producer may put in one batch (batch.size) and one record (message.max.bytes)
// so that a batch never exceeds a topic limit of `limit` bytes: the limit less a
// RecordBatch header (61 bytes) and room for librdkafka's own framing.
int64_t batch_bytes_for(int64_t limit);
int64_t record_bytes_for(int64_t limit);

}  // namespace exactly::kafka
