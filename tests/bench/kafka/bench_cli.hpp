// Command line and librdkafka client set-up shared by the Kafka benchmark's tools:
// "--key value" options, a client whose every property is checked (each failure ending
// the tool with its name), and a topic's partition count.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

namespace exactly_bench {

[[noreturn]] inline void die(const char* tool, const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n", tool, msg.c_str());
  std::exit(2);
}

// Calls on(key, value) for each "--key value" pair; on returns false for a key it does
// not know.
template <class On>
void each_option(const char* tool, int argc, char** argv, On on) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view k = argv[i];
    if (i + 1 >= argc) die(tool, "option " + std::string(k) + " needs a value");
    if (!on(k, argv[++i])) die(tool, "unknown option " + std::string(k));
  }
}

using Property = std::pair<const char*, std::string>;

// A client of the given type with these properties; configure(conf) adds callbacks.
template <size_t N, class Configure>
rd_kafka_t* make_client(const char* tool, rd_kafka_type_t type, const Property (&props)[N],
                        Configure configure) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [k, v] : props)
    if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK)
      die(tool, std::string(k) + ": " + err);
  configure(conf);
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
  if (!rk) die(tool, std::string("rd_kafka_new: ") + err);
  return rk;
}

// The topic's partition count from the broker's metadata, -1 if it has none (yet).
inline int partition_count(rd_kafka_t* rk, const std::string& topic) {
  rd_kafka_topic_t* t = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  int n = -1;
  if (rd_kafka_metadata(rk, 0, t, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR)
      n = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
  }
  rd_kafka_topic_destroy(t);
  return n;
}

}  // namespace exactly_bench
