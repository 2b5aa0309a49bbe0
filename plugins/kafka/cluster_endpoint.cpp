#include "cluster_endpoint.hpp"

#include "embedded_cluster.hpp"

namespace exactly::kafka {

ClusterEndpoint resolve_cluster(const std::string& servers) {
  ClusterEndpoint e;
  if (!is_embedded(servers)) {
    e.bootstrap = e.display = servers;
    return e;
  }
  e.bootstrap = EmbeddedCluster::bootstrap_servers();
  e.display = servers + " (" + e.bootstrap + ")";
  e.prepare_topic = [](const std::string& topic) { EmbeddedCluster::ensure_topic(topic); };
  // The mock coordinator makes a joining member wait about session.timeout.ms.
  e.consumer_settings = {{"session.timeout.ms", "3000"}, {"heartbeat.interval.ms", "300"}};
  e.transactions_caveat = "the embedded cluster does not implement transactions faithfully; "
                          "exactly_once needs a real broker";
  e.changelog_caveat = "the embedded cluster keeps no changelogs";
  return e;
}

}  // namespace exactly::kafka
