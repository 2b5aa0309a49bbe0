// The kafka plugin: one library, a source and a sink sharing the checkpoint format and
// (for `bootstrap.servers: embedded`, cluster_endpoint.hpp) one in-process demo cluster.
#include "kafka_sink.hpp"
#include "kafka_source.hpp"

#include <exactly/sdk.hpp>

EXACTLY_PLUGIN("kafka", "0.1.0",
               exactly::sdk::source<exactly::kafka::KafkaSource>(
                   "kafka",
                   "Consumes Kafka topics as a consumer-group member (read_committed); "
                   "positions as kafka.v1 checkpoints",
                   exactly::kafka::kSourceFields),
               exactly::sdk::sink<exactly::kafka::KafkaSink>(
                   "kafka",
                   "Produces to Kafka; exactly_once commits output and kafka source offsets "
                   "in one transaction",
                   exactly::kafka::kSinkFields))
