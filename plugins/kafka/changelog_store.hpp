// State changelogs kept by the kafka sink for the pipeline's stateful transforms (ABI
// 1.1 state calls). Writing goes through the sink's own producer, so in exactly_once a
// changelog record commits in the same transaction as the output and the source
// offsets. This class owns the rest: creating or checking the changelog topic, reading
// it back (read_committed) for a restore, and the positions the committed records got.
#pragma once

#include "rdkafka_common.hpp"

#include <exactly/sdk.hpp>
#include <librdkafka/rdkafka.h>

#include <map>
#include <mutex>
#include <vector>
#include <string>
#include <iterator>
#include <utility>

namespace exactly::kafka {

class ChangelogStore {
 public:
  // `connection`: security.protocol, sasl.*, ssl.* of the sink (connection_settings()),
  // for the readers, which are consumers of their own.
  ChangelogStore(sdk::Host host, rd_kafka_t* producer, std::string connect,
                 std::string servers_display, int64_t timeout_ms,
                 std::map<std::string, std::string> connection = {});
  ~ChangelogStore();
  ChangelogStore(const ChangelogStore&) = delete;
  ChangelogStore& operator=(const ChangelogStore&) = delete;

  // Creates the topic when missing (compacted, one partition per input partition), grows
  // it when `part` needs more partitions, or checks it; fills the readable range of `part`'s changelog partition.
  sdk::Status open(const std::string& topic, const sdk::Partition& part, sdk::StateInfo& info);
  sdk::Status read(const std::string& topic, const sdk::Partition& part, int64_t from,
                   const sdk::StateRecordFn& fn);

  // Delivery reports of changelog records carry this as their opaque.
  void* marker() { return &marker_; }
  void delivered(const char* topic, int32_t partition, int64_t offset);
  // The round's records are committed / thrown away.
  void committed();
  void aborted() { pending_.clear(); }
  // An input partition left this instance: forget the positions of its number.
  void forget(int32_t partition) {
    for (auto it = committed_.begin(); it != committed_.end();)
      it = it->first.second == partition ? committed_.erase(it) : std::next(it);
  }
  int64_t position(const std::string& topic, int32_t partition) const;
  // Whether a stage of this sink keeps its changelog in `topic` (opened here).
  bool keeps(std::string_view topic);
  // A changelog topic this sink has opened that the cluster no longer has as a changelog
  // (deleted while the pipeline ran, or made again as an ordinary topic by a broker that
  // creates topics on first use), or "" when all are there or the cluster cannot tell.
  std::string vanished_topic(int64_t timeout_ms);

 private:
  sdk::Status ensure_topic(const std::string& topic, const sdk::Partition& part, bool& created);
  sdk::Status create_topic(const std::string& topic, int partitions, bool& made);
  sdk::Status grow_topic(const std::string& topic, int from, int to, const std::string& input);
  sdk::Status check_policy(const std::string& topic);
  sdk::Status describe_policy(const std::string& topic, std::string& policy);
  sdk::Status judge_policy(const std::string& topic, const std::string& policy);
  // A pooled read_committed consumer, held for one open() or read(): open and read may
  // run concurrently (ABI 1.2: a stage restoring a held partition in its own thread).
  rd_kafka_t* reader(std::string& error);
  void give_back(rd_kafka_t* rk);
  // The readers' librdkafka log, through the host (without it librdkafka printed raw
  // "%3|...|rdkafka#consumer-3|" lines on stderr, e.g. while closing with the broker gone).
  static void reader_log(const rd_kafka_t* rk, int level, const char* fac, const char* buf);
  class Reader {
   public:
    Reader(ChangelogStore* s, rd_kafka_t* rk) : store_(s), rk_(rk) {}
    ~Reader();
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;
    rd_kafka_t* get() const { return rk_; }

   private:
    ChangelogStore* store_;
    rd_kafka_t* rk_;
  };

  sdk::Host host_;
  rd_kafka_t* producer_;
  std::string connect_, display_;
  std::map<std::string, std::string> connection_;
  int64_t timeout_ms_;
  std::mutex mu_;  // idle_readers_
  std::vector<rd_kafka_t*> idle_readers_;
  std::mutex topics_mu_;  // partitions_
  char marker_ = 0;
  std::map<std::string, int> partitions_;  // checked topics -> partition count
  using Key = std::pair<std::string, int32_t>;
  std::map<Key, int64_t> pending_, committed_;
};

}  // namespace exactly::kafka
