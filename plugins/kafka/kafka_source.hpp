// The kafka source: a read_committed consumer-group member with an eager assignor.
// Positions are tracked per partition from what poll() actually handed to the host, so
// checkpoint() never runs ahead of the records the pipeline has seen.
#pragma once

#include "checkpoint_codec.hpp"
#include "cluster_endpoint.hpp"
#include "fault_injection.hpp"
#include "fetch_waker.hpp"
#include "kafka_settings.hpp"
#include "priority_planner.hpp"
#include "rdkafka_common.hpp"
#include "standby_planner.hpp"

#include <exactly/sdk.hpp>
#include <librdkafka/rdkafka.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace exactly::kafka {

extern const ex_config_field kSourceFields[16];

class KafkaSource final : public sdk::Source, public ClientContext {
 public:
  KafkaSource(sdk::Host host, const sdk::Config& cfg);
  // The create-time checks, librdkafka's property checks included, without a client,
  // the embedded cluster or state.dir (ABI 1.3).
  static sdk::Status validate(const sdk::Config& cfg);
  ~KafkaSource() override;

  sdk::Status open(const std::optional<sdk::Checkpoint>& resume) override;
  sdk::Status poll(int timeout_ms, std::vector<ex_record>& out, bool& end_of_input) override;
  sdk::Status checkpoint(sdk::Checkpoint& out) override;
  // ABI 1.4: checkpoint() with some partitions (by id) further back: a sink's completion
  // cursor (never ahead of checkpoint()).
  sdk::Status checkpoint_at(const std::vector<sdk::Partition>& parts, sdk::Checkpoint& out);
  sdk::Status commit(const sdk::Checkpoint& positions) override;
  sdk::Status rewind(const sdk::Checkpoint& positions) override;
  sdk::Status pause(bool paused) override;
  sdk::Status pause_partitions(const std::vector<sdk::Partition>& parts, bool paused) override;

 private:
  struct PartState {
    std::string topic;
    std::string name;
    int32_t number = 0;
    int32_t id = 0;
    bool assigned = false;
    bool held = false;  // paused for a stage (pause_partitions): its records are dropped
    // Position known to be committed (at assignment, after commit/rewind), or
    // RD_KAFKA_OFFSET_INVALID when the group has none yet.
    int64_t start = RD_KAFKA_OFFSET_INVALID;
    // Next offset to hand out: last returned + 1; RD_KAFKA_OFFSET_INVALID until known.
    int64_t next = RD_KAFKA_OFFSET_INVALID;
    // The group's offset when this assignment began: no rewind goes back before it.
    int64_t assigned_at = RD_KAFKA_OFFSET_INVALID;
    // Whether librdkafka has it paused (whole-source pause, held, or priority).
    bool rd_paused = false;
    // Priority (kafka_source_priority.cpp): its level (index in `priority`, -1 without),
    // paused because a higher level has backlog, the watermarks last seen, when a record
    // of it last arrived (or it started fetching), and records fetched but held back for
    // a later poll (in offset order, all at or after `next`).
    int level = -1;
    bool prio_paused = false;
    int64_t lo = -1, hi = -1;
    int64_t last_seen_ms = 0;
    std::deque<rd_kafka_message_t*> buffered;
    // Waiting for a record's not-before time (kafka_source_not_before.cpp): paused in
    // librdkafka and positioned at that record (`next`) until this wall-clock time
    // (epoch ms); 0 while not waiting.
    int64_t not_before_ms = 0;
    // When a record of it last arrived, or it last was (re)started or paused: the fetch
    // stall check (kafka_source_stall.cpp) measures from here.
    int64_t progress_ms = 0;
    // When it was last heard of before a stall check's question to its leader went
    // unanswered (0: not so): the warning says how long it has not been read.
    int64_t unanswered_since_ms = 0;
  };

  static void rebalance_cb(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                           rd_kafka_topic_partition_list_t* parts, void* opaque);
  void on_assign(rd_kafka_topic_partition_list_t* parts);
  void on_revoke(rd_kafka_topic_partition_list_t* parts);

  int32_t id_for(const std::string& topic, int32_t partition);
  // checkpoint(), with the partitions (by id) in `lowered` at those positions instead.
  sdk::Status encode_positions(const std::map<int32_t, int64_t>& lowered, sdk::Checkpoint& out);
  PartState* state_of(const rd_kafka_message_t* m);
  void release_batch();
  void drop_pending_of_unassigned();
  // Where a partition restarts when nothing consumed has been committed yet.
  int64_t reset_offset() const;
  // Sets the offset of each entry of `list` still at INVALID (nothing committed) to its
  // partition's log start, looked up here, when auto.offset.reset is earliest.
  void resolve_earliest(rd_kafka_topic_partition_list_t* list);
  sdk::Status handle_message_error(rd_kafka_message_t* m);
  sdk::Status seek_all(const std::vector<std::pair<PartState*, int64_t>>& targets);
  void close_consumer();
  // The librdkafka pause state each assigned partition should have: paused while the
  // whole source is, while held for a stage, or while its priority level waits.
  // `sought`: the parts were just sought to where they go on, so resuming them needs no
  // position check (which, for a partition with no known start, would seek it again).
  sdk::Status apply_pauses(const std::vector<PartState*>& parts, bool sought = false);
  sdk::Status resume_checked(std::vector<PartState*> parts, bool sought);
  static bool wants_pause(const PartState& p, bool source_paused) {
    return source_paused || p.held || p.prio_paused || p.not_before_ms > 0;
  }

  // Not-before waits (kafka_source_not_before.cpp), with `not.before.header`.
  bool waits_for_not_before() const { return !not_before_header_.empty(); }
  // Partitions whose time has come are resumed (before fetching).
  sdk::Status release_not_before();
  // Takes out of msgs_ the records a partition must not hand out yet: from the first
  // record whose not-before time is ahead, the rest of its partition; pauses those
  // partitions positioned at that record.
  sdk::Status hold_not_before();
  void report_not_before();

  // Priority levels (kafka_source_priority.cpp).
  bool prioritized() const { return planner_.has_value(); }
  void take_priority_levels(const SourceSettings& s);
  int level_of(const std::string& topic) const;
  void forward_to_levels(const std::vector<PartState*>& added);
  void priority_on_assign(const std::vector<PartState*>& added);
  // Records from the level queues into msgs_ (or buffers), no waiting.
  sdk::Status take_from_levels(PriorityPlanner::Plan& plan);
  size_t level_buffered(int level) const;
  PriorityPlanner::Plan priority_plan();
  sdk::Status apply_priority(const PriorityPlanner::Plan& plan);
  // Buffered records the plan lets out now, into msgs_; allowances are used up.
  void hand_buffered(PriorityPlanner::Plan& plan);
  // A message just fetched: true to hand it out now, false when it was buffered.
  bool admit(rd_kafka_message_t* m, PartState& p, PriorityPlanner::Plan& plan);
  void priority_handed(const PriorityPlanner::Plan& plan);
  void drop_buffered(PartState& p);
  void drop_all_buffered();
  size_t buffered_total() const;
  void report_priority();
  // The group is described after each assignment (kafka_source_group_watch.cpp): for
  // standby replicas (which partitions to keep warm) and to announce members that left
  // (departed_members.hpp).
  bool watches_group() const { return standby_replicas_ > 0 || !departure_prefix_.empty(); }
  void group_watch_step();
  void on_group_description(rd_kafka_event_t* ev);
  // false with `why` when the description failed or the group is not stable.
  bool read_description(rd_kafka_event_t* ev, std::vector<GroupMember>& members,
                        std::vector<std::string>& client_ids, std::string& why);
  // Describes the group now (blocking, bounded) and announces members that left: for
  // on_assign, whose committed-offset read a departed member's open transaction blocks.
  void announce_departures_now(int64_t timeout_ms);
  // Schedules the next description; true while still settling (a retry is due soon).
  bool retry_describe(const std::string& why);
  void update_standbys(const std::vector<GroupMember>& members);
  // A topic this source subscribes to (a name in `topics`, or one a `^regex` there matches);
  // answers are kept, so a pattern is matched once per topic, not per partition and plan.
  bool subscribed(const std::string& topic);
  std::map<std::string, bool> subscribed_;
  void announce_departures(const std::vector<std::string>& client_ids);

  // settings
  ClusterEndpoint cluster_;  // bootstrap.servers resolved (cluster_endpoint.hpp)
  std::map<std::string, std::string> connection_;  // connection_settings() of `rdkafka`, for messages
  std::string group_;
  std::vector<std::string> topics_;
  size_t batch_size_;
  int64_t poll_timeout_ms_;
  int64_t stop_when_idle_ms_ = 0;
  int64_t last_lag_report_ms_ = 0;
  void report_lag();
  // Fetch stall check (kafka_source_stall.cpp), at most once a second: a fetchable
  // partition without records for stall_timeout_ms_ while the broker holds records past
  // its position gets its fetch restarted there.
  int64_t stall_timeout_ms_ = 30000;
  int64_t last_stall_check_ms_ = 0;
  void check_stalls();
  void warn_unanswered(PartState& p, int64_t now, rd_kafka_resp_err_t err);
  // The offset a partition's next record comes from (RD_KAFKA_OFFSET_BEGINNING when it
  // has none yet and starts at the earliest), or RD_KAFKA_OFFSET_INVALID when unknown.
  int64_t resume_point(const PartState& p) const;
  void restart_fetch(PartState& p, int64_t at, int64_t waiting);
  int64_t last_record_ms_ = 0;  // 0 until the first poll
  int64_t open_timeout_ms_;
  bool reset_latest_ = false;
  bool reset_error_ = false;  // auto.offset.reset: error

  rd_kafka_t* rk_ = nullptr;
  // The consumer queue (records of partitions without a priority level wait here) and its
  // fetchers' wake-ups (fetch_waker.hpp); stopped in close_consumer.
  rd_kafka_queue_t* consumer_q_ = nullptr;
  std::unique_ptr<FetchWaker> waker_;
  uint64_t reported_wakeups_ = 0;
  void observe_queue(uint64_t handed_bytes, size_t handed);
  bool opened_ = false;
  bool closing_ = false;
  bool static_member_ = false;  // static.membership: a close does not leave the group
  std::string instance_id_;      // group.instance.id, set or derived ("" when none)
  // "kafka source: <librdkafka's fatal error>", with what a fence of the member's
  // group.instance.id means (fenced_instance_hint).
  std::string fatal_text();
  bool paused_ = false;
  sdk::Status pending_;  // an error raised inside a callback, returned by the next poll

  std::string not_before_header_;
  // Test-only (EXACTLY_FAULTS): seek_all() fails as a seek of a partition whose fetch has
  // not started would.
  static constexpr const char* kSeekFault = "kafka.source.seek";
  Faults faults_;
  bool warned_bad_not_before_ = false;
  int64_t last_not_before_report_ms_ = 0;
  int reported_waiting_ = -1;

  std::vector<PartState> parts_;  // by id
  std::map<std::pair<std::string, int32_t>, int32_t> ids_;
  // Fast path from a message's topic handle to partition ids (index = partition).
  std::unordered_map<const rd_kafka_topic_t*, std::vector<int32_t>> rkt_ids_;
  // The last message's partition: a fetch hands out a partition's records in a run, so
  // most lookups end here (the map lookup was 1.6% of a profile at 245k records/s).
  const rd_kafka_topic_t* last_rkt_ = nullptr;
  int32_t last_partition_ = -1;
  int32_t last_id_ = -1;
  // Positions a sink stored with its output: a partition starts at the later of these and
  // the group's offsets (see on_assign).
  std::map<std::pair<std::string, int32_t>, int64_t> resume_;

  int standby_replicas_ = 0;
  // "exactly-<pipeline>-": client ids of this pipeline's hosts (fence.departed); empty
  // when departures are not announced.
  std::string departure_prefix_;
  std::vector<std::string> last_members_;  // client ids in the last stable description
  bool members_known_ = false;
  rd_kafka_queue_t* admin_q_ = nullptr;  // DescribeConsumerGroups results
  bool describing_ = false;
  bool stale_description_ = false;  // the one in flight predates announce_departures_now
  int64_t describe_due_ms_ = -1;  // -1: nothing scheduled
  int describe_retries_ = 0;
  std::string standby_why_;  // last reason the model did not apply (logged on change)
  std::vector<std::pair<std::string, int32_t>> standby_;  // last set given to the host
  bool standby_planned_ = false;  // the first plan is logged even when it is empty

  std::vector<std::string> priority_;  // topics, highest priority first
  std::optional<PriorityPlanner> planner_;
  // Each level's partitions forward their fetched records here (not to the consumer
  // queue, where a level's prefetch would sit in front of the others').
  std::vector<rd_kafka_queue_t*> level_q_;
  double min_share_ = 0;
  int64_t last_priority_report_ms_ = 0;
  std::vector<int> reported_paused_;  // per level, the paused gauge last reported (-1: none)
  size_t rotate_ = 0;  // where hand_buffered starts within a level, so no partition waits

  // The batch last handed out: its messages own the bytes the records point into.
  std::vector<rd_kafka_message_t*> msgs_;
  std::vector<ex_header> headers_;
  std::vector<rd_kafka_headers_t*> msg_headers_;  // each of msgs_' header list, or null
};

}  // namespace exactly::kafka
