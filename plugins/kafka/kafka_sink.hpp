// The kafka sink. at_least_once: an idempotent producer flushed at every commit point.
// exactly_once: a transactional producer; each round is one transaction that also
// carries the kafka source's offsets (send_offsets_to_transaction, KIP-447), so output
// and input positions become visible together or not at all.
#pragma once

#include "changelog_store.hpp"
#include "cluster_endpoint.hpp"
#include "checkpoint_codec.hpp"
#include "departed_members.hpp"
#include "kafka_settings.hpp"
#include "rdkafka_common.hpp"
#include "topic_router.hpp"
#include "topic_rules.hpp"
#include "txn_fencer.hpp"

#include <exactly/sdk.hpp>
#include <librdkafka/rdkafka.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace exactly::kafka {

extern const ex_config_field kSinkFields[10];

class KafkaSink final : public sdk::Sink, public ClientContext {
 public:
  KafkaSink(sdk::Host host, const sdk::Config& cfg);
  // The create-time checks, librdkafka's property checks included, without a client,
  // the embedded cluster or state.dir (ABI 1.3).
  static sdk::Status validate(const sdk::Config& cfg);
  ~KafkaSink() override;

  sdk::Status open(std::optional<sdk::Checkpoint>& stored) override;
  sdk::Status assign(const std::vector<sdk::Partition>& parts) override;
  sdk::Status write(const sdk::Batch& in, const sdk::RecordErrors& errors) override;
  sdk::Status prepare_commit() override;
  sdk::Status commit(const sdk::Checkpoint* positions, bool& stored_positions) override;
  sdk::Status abort() override;
  bool positions_in_source() const override { return eos_; }
  sdk::Status revoke(const std::vector<sdk::Partition>& parts) override;

  sdk::Status state_open(const std::string& store, const sdk::Partition& part,
                         sdk::StateInfo& info) override;
  sdk::Status state_read(const std::string& store, const sdk::Partition& part, int64_t from,
                         const sdk::StateRecordFn& fn) override;
  sdk::Status state_write(const std::string& store, const sdk::Partition& part, ex_bytes key,
                          ex_bytes value) override;
  int64_t state_position(const std::string& store, const sdk::Partition& part) override;

 private:
  KafkaSink(sdk::Host host, SinkSettings s);
  enum class Partitioning { Input, Key, Default };

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  static void dr_cb(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque);

  sdk::Status commit_transactional(const sdk::Checkpoint* positions, bool& stored);
  sdk::Status begin_if_needed();
  // Aborts the open transaction (resuming on timeouts). `cause` is returned as
  // Status::abortable when the abort itself succeeds.
  sdk::Status abort_transaction(const std::string& cause);
  // Class of a failed transactional call: fatal, must-abort (aborts, then abortable),
  // or plain retriable.
  sdk::Status txn_failure(const char* op, const rd_kafka_error_t* e);
  sdk::Status flush_all();
  sdk::Status take_delivery_failures();
  // One changelog record into the producer (with the transaction open, under EOS).
  sdk::Status produce_state(const std::string& store, int32_t partition, ex_bytes key, ex_bytes value);
  // A new (uncached) handle; nullptr with `why` if librdkafka refuses the name.
  rd_kafka_topic_t* new_handle(const std::string& topic, std::string& why);
  // The cached handle for a topic, made on first use. topic_handle throws a refusal as
  // fatal (the sink's own topics); routed_handle returns it as the record's reason, and
  // also refuses names Kafka cannot have and topics the cluster lacks (topic.from).
  rd_kafka_topic_t* topic_handle(std::string_view topic);
  rd_kafka_topic_t* routed_handle(std::string_view topic, std::string& why);
  std::string missing_reason(std::string_view topic) const;
  void remember_missing(std::string name);
  std::string refuse_unknown_routed(std::string_view topic);
  // Destroys the handle of a routed topic, if the sink holds one.
  bool drop_routed(std::string_view topic);
  // True only when the cluster answered that the topic does not exist (and did not
  // create it); a timeout or any other answer is not an answer.
  bool cluster_lacks(rd_kafka_topic_t* rkt);
  // "<n> partition(s)" of `topic` as the cluster says, for a partitioning: input error.
  std::string partition_count_text(const std::string& topic);
  void forget_vanished_topics();
  sdk::Status fatal_status(const std::string& what);
  void log_fence_reports();

  // settings
  ClusterEndpoint cluster_;  // bootstrap.servers resolved (cluster_endpoint.hpp)
  std::map<std::string, std::string> connection_;  // connection_settings() of `rdkafka`
  TopicRouter router_;
  Partitioning partitioning_ = Partitioning::Default;
  bool eos_ = false;
  // at_least_once: the round's changelog records, sent after its output (prepare_commit).
  struct PendingState {
    std::string topic;
    int32_t partition = 0;
    std::string key;
    std::optional<std::string> value;  // nullopt: a tombstone
  };
  std::vector<PendingState> pending_state_;
  std::string txn_id_;
  std::string identity_file_;  // where the default transactional.id's instance part lives
  int64_t txn_timeout_ms_ = 60000;
  int64_t call_timeout_ms_ = 15000;
  int64_t open_timeout_ms_ = 30000;
  int64_t message_timeout_ms_ = 300000;
  std::string max_message_bytes_;
  int64_t batch_bytes_ = 1000000;  // batch.size in effect
  rd_kafka_conf_t* conf_template_ = nullptr;  // the producer's configuration, to make it again
  // Makes the producer again with batches and records that fit the topic's own
  // max.message.bytes when that is smaller than librdkafka's (topic_limit.hpp).
  sdk::Status fit_topic_limit(const std::string& topic);
  // A failed commit whose changelog topic is gone: a config error naming it, not a retry.
  sdk::Status changelog_gone(sdk::Status st);

  rd_kafka_t* rk_ = nullptr;
  std::unique_ptr<ChangelogStore> changelog_;  // after open(), on a real cluster
  rd_kafka_topic_t* fixed_rkt_ = nullptr;
  std::unordered_map<std::string, rd_kafka_topic_t*, StringHash, std::equal_to<>> topics_;
  // Handles of routed topics (topic.from), apart from the sink's own: a routed topic that
  // failed delivery as unknown (deleted while the sink ran) is forgotten before the next
  // write, so that the replay asks the cluster again (forget_vanished_topics).
  std::unordered_map<std::string, rd_kafka_topic_t*, StringHash, std::equal_to<>> routed_;
  std::vector<std::string> vanished_;
  // Topics the cluster does not let this producer write (an ACL): routed ones have their
  // records rejected until kDeniedRecheckMs has passed; the sink's own topic, or a
  // changelog, is a config error. Learnt from a failed round (note_denied_topics).
  sdk::Status note_denied_topics();
  std::string denied_reason(std::string_view topic) const;
  sdk::Status denied_config(const std::string& key, const std::string& topic) const;
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> denied_until_;
  std::vector<std::string> dr_denied_;  // from delivery reports (at_least_once)
  static constexpr int64_t kDeniedRecheckMs = 60000;
  // Routed topics the cluster said it does not have: until when (ms) their records are
  // rejected without asking again.
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> missing_until_;
  static constexpr int64_t kMissingRecheckMs = 10000;
  static constexpr size_t kMissingKept = 4096;
  // What each topic written to makes the broker refuse record by record (topic_rules.hpp),
  // read once per topic; forgotten when a delivery is refused as such anyway (the topic's
  // configs changed), so that the replay reads them again.
  const TopicRules& rules_for(std::string_view topic);
  std::unordered_map<std::string, TopicRules, StringHash, std::equal_to<>> rules_;
  bool rules_stale_ = false;
  std::vector<int32_t> number_of_id_;  // partition id -> input partition number, -1 unknown

  bool opened_ = false;
  bool txn_open_ = false;
  int64_t txn_began_ms_ = 0;  // steady ms of the open transaction's begin
  bool broken_ = false;  // fatal: only destroy is left
  uint64_t dr_failed_ = 0;
  std::string dr_first_error_;
  // Offsets of the last committed transaction: an idle round with unchanged positions
  // needs no transaction at all.
  std::vector<TopicOffset> last_offsets_;
  // exactly_once with the default transactional.id: fences members of the group that
  // left without closing (departed_members.hpp). Declared last: the subscription goes
  // first, then the fencer's thread is joined.
  std::unique_ptr<TxnFencer> fencer_;
  std::unique_ptr<departed::Subscription> departed_;
};

}  // namespace exactly::kafka
