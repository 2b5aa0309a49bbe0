// What a kafka source or sink connects to, resolved from `bootstrap.servers` before its
// client is built: a broker list as given, or for `embedded` the in-process demo cluster
// (embedded_cluster.hpp). This is the one place that knows the demo cluster: the source
// and the sink ask the endpoint what the cluster needs and can do, never which it is.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace exactly::kafka {

struct ClusterEndpoint {
  std::string bootstrap;  // handed to librdkafka
  std::string display;    // for messages: as given, with the address it resolved to
  // Called before a topic is first produced to or subscribed to; empty for a broker
  // (which creates topics or not as its own config says). The demo cluster creates it.
  std::function<void(const std::string& topic)> prepare_topic;
  // Consumer settings the cluster needs: over the source's defaults, under the user's
  // rdkafka map (apply_consumer_defaults).
  std::map<std::string, std::string> consumer_settings;
  // Non-empty when the cluster's transactions are not faithful: exactly_once warns with
  // it, and departed instances' transactional ids are not fenced.
  std::string transactions_caveat;
  // Non-empty when the cluster can keep no changelog topics (no admin API): why.
  std::string changelog_caveat;
};

// Creates the demo cluster on first use of `embedded` (throws sdk::StatusError if it
// cannot).
ClusterEndpoint resolve_cluster(const std::string& servers);

}  // namespace exactly::kafka
