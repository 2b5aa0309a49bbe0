// `bootstrap.servers: embedded` — one in-process librdkafka mock cluster shared by every
// kafka source and sink in the process, so a pipeline runs with no broker at all. For
// trying things only: librdkafka 2.0.2's mock shows aborted transactional data to
// read_committed readers and drops offsets sent in transactions (see README.md).
#pragma once

#include <string>

namespace exactly::kafka {

inline constexpr const char* kEmbeddedWord = "embedded";
inline constexpr int kEmbeddedPartitions = 4;

class EmbeddedCluster {
 public:
  // Creates the cluster on first use (then keeps it, and this library, loaded for the
  // rest of the process so data survives pipeline rebuilds) and returns its bootstrap
  // address.
  static std::string bootstrap_servers();
  // Idempotent: an existing topic is left as it is.
  static void ensure_topic(const std::string& topic, int partitions = kEmbeddedPartitions);
};

// bootstrap.servers as given, or the embedded cluster's address for "embedded".
inline bool is_embedded(const std::string& servers) { return servers == kEmbeddedWord; }

}  // namespace exactly::kafka
