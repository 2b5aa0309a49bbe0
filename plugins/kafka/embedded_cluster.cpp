#include "embedded_cluster.hpp"

#include <dlfcn.h>
#include <exactly/sdk.hpp>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <cstdio>
#include <mutex>

namespace exactly::kafka {
namespace {

struct Cluster {
  rd_kafka_t* owner = nullptr;
  rd_kafka_mock_cluster_t* mock = nullptr;
  std::string servers;
};

std::mutex g_mu;
Cluster* g_cluster = nullptr;  // never freed: it lives as long as the process

// The owner handle is never polled, so its logs must not queue up; only errors are
// worth printing, and nothing else in the process is there to receive them.
void owner_log(const rd_kafka_t*, int level, const char* fac, const char* buf) {
  if (level <= 3) std::fprintf(stderr, "exactly kafka embedded cluster: %s: %s\n", fac, buf);
}

// Unloading this library would destroy the cluster (and every record in it) under
// clients that still hold its address; pin the library for the process lifetime.
void pin_library() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&pin_library), &info) != 0 && info.dli_fname != nullptr)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

Cluster& cluster_locked() {
  if (g_cluster != nullptr) return *g_cluster;
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set_log_cb(conf, &owner_log);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    throw sdk::StatusError(
        sdk::Status::fatal(std::string("embedded kafka: cannot create owner handle: ") + errstr));
  }
  rd_kafka_mock_cluster_t* mock = rd_kafka_mock_cluster_new(rk, 1);
  if (mock == nullptr) {
    rd_kafka_destroy(rk);
    throw sdk::StatusError(sdk::Status::fatal("embedded kafka: cannot create the mock cluster"));
  }
  pin_library();
  g_cluster = new Cluster{rk, mock, rd_kafka_mock_cluster_bootstraps(mock)};
  return *g_cluster;
}

}  // namespace

std::string EmbeddedCluster::bootstrap_servers() {
  std::lock_guard<std::mutex> g(g_mu);
  return cluster_locked().servers;
}

void EmbeddedCluster::ensure_topic(const std::string& topic, int partitions) {
  std::lock_guard<std::mutex> g(g_mu);
  Cluster& c = cluster_locked();
  rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(c.mock, topic.c_str(), partitions, 1);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
    throw sdk::StatusError(sdk::Status::fatal("embedded kafka: cannot create topic " + topic +
                                              ": " + rd_kafka_err2str(err)));
}

}  // namespace exactly::kafka
