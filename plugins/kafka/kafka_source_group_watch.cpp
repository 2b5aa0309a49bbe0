// After every assignment the source describes its consumer group (an admin request
// answered on its own queue, never blocking poll), re-described every 30 s and sooner
// while the group settles. From a stable description it
// - announces members that have left since the last one (fence.departed: the pipeline's
//   transactional sink aborts what they left open, departed_members.hpp);
// - with standby.replicas, tells the host which partitions to keep warm: the ones this
//   member would get if any N others left (standby_planner.hpp).
#include "kafka_source.hpp"

#include "departed_members.hpp"

#include <algorithm>

#include <regex.h>

namespace exactly::kafka {

namespace {
constexpr int64_t kRefreshMs = 30000;
constexpr int64_t kRetryMs = 1000;
constexpr int kSettleRetries = 10;
// A description never times out inside librdkafka (this is its longest request timeout).
// In librdkafka 2.0.2 (rdkafka_admin.c / rdkafka_coord.c, the same at its current head), a
// request to the group coordinator that times out while it still waits for the
// coordinator (down, or not found yet) frees its state, and when the coordinator comes
// back the request is failed once more through the freed state: the process aborts
// ("rd_kafka_enq_once_del_source_return: Assertion `eonce->refcnt > 0' failed"). With
// the 10 s timeout used before, any broker outage longer than a re-description's
// period did that to every host (fence.departed is on by default). So the watch keeps
// one description in flight until it is answered, which happens once the coordinator is
// back (or the consumer is closed, which fails it cleanly), and until then plans with
// what it knew.
constexpr int kDescribeTimeoutMs = 3600 * 1000;
}  // namespace

void KafkaSource::group_watch_step() {
  if (admin_q_ == nullptr) admin_q_ = rd_kafka_queue_new(rk_);
  if (describing_) {
    rd_kafka_event_t* ev = rd_kafka_queue_poll(admin_q_, 0);
    if (ev == nullptr) return;
    describing_ = false;
    if (std::exchange(stale_description_, false)) describe_due_ms_ = now_ms() + kRetryMs;
    else on_group_description(ev);
    rd_kafka_event_destroy(ev);
    return;
  }
  if (describe_due_ms_ < 0 || now_ms() < describe_due_ms_) return;
  const char* groups[] = {group_.c_str()};
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk_, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
  char err[256];
  rd_kafka_AdminOptions_set_request_timeout(opts, kDescribeTimeoutMs, err, sizeof(err));
  rd_kafka_DescribeConsumerGroups(rk_, groups, 1, opts, admin_q_);
  rd_kafka_AdminOptions_destroy(opts);
  describing_ = true;
  describe_due_ms_ = -1;
}

bool KafkaSource::retry_describe(const std::string& why) {
  // While the group settles (members still joining) the description lags; try again.
  if (describe_retries_++ < kSettleRetries) {
    describe_due_ms_ = now_ms() + kRetryMs;
    return true;
  }
  if (why != standby_why_)
    host_.warn(std::string("kafka source: ") +
               (standby_replicas_ > 0 ? "standby replicas" : "watching the group") + ": " + why);
  standby_why_ = why;
  describe_due_ms_ = now_ms() + kRefreshMs;
  return false;
}

bool KafkaSource::read_description(rd_kafka_event_t* ev, std::vector<GroupMember>& members,
                                   std::vector<std::string>& client_ids, std::string& why) {
  const auto* result = rd_kafka_event_DescribeConsumerGroups_result(ev);
  size_t n = 0;
  const rd_kafka_ConsumerGroupDescription_t** groups =
      result ? rd_kafka_DescribeConsumerGroups_result_groups(result, &n) : nullptr;
  if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR || n != 1) {
    why = std::string("cannot describe group ") + group_ + ": " +
          (rd_kafka_event_error(ev) ? rd_kafka_event_error_string(ev) : "no answer");
    return false;
  }
  const auto* g = groups[0];
  if (const rd_kafka_error_t* e = rd_kafka_ConsumerGroupDescription_error(g)) {
    why = "cannot describe group " + group_ + ": " + rd_kafka_error_string(e);
    return false;
  }
  if (rd_kafka_ConsumerGroupDescription_state(g) != RD_KAFKA_CONSUMER_GROUP_STATE_STABLE) {
    why = "group " + group_ + " is not stable";
    return false;
  }
  for (size_t i = 0; i < rd_kafka_ConsumerGroupDescription_member_count(g); ++i) {
    const auto* m = rd_kafka_ConsumerGroupDescription_member(g, i);
    const char* client = rd_kafka_MemberDescription_client_id(m);
    client_ids.emplace_back(client ? client : "");
    GroupMember gm;
    const char* id = rd_kafka_MemberDescription_consumer_id(m);
    const char* inst = rd_kafka_MemberDescription_group_instance_id(m);
    gm.member_id = id ? id : "";
    gm.instance_id = inst ? inst : "";
    const auto* a = rd_kafka_MemberDescription_assignment(m);
    const auto* list = a ? rd_kafka_MemberAssignment_partitions(a) : nullptr;
    for (int j = 0; list && j < list->cnt; ++j)
      gm.owned.emplace_back(list->elems[j].topic, list->elems[j].partition);
    members.push_back(std::move(gm));
  }
  return true;
}

void KafkaSource::on_group_description(rd_kafka_event_t* ev) {
  std::vector<GroupMember> members;
  std::vector<std::string> client_ids;
  std::string why;
  if (!read_description(ev, members, client_ids, why)) {
    retry_describe(why);
    return;
  }
  if (!departure_prefix_.empty()) announce_departures(client_ids);
  if (standby_replicas_ == 0) {
    describe_retries_ = 0;
    describe_due_ms_ = now_ms() + kRefreshMs;
    return;
  }
  update_standbys(members);
}

void KafkaSource::announce_departures_now(int64_t timeout_ms) {
  // A description the watch has in flight was asked for before this one: it may still
  // list the departed member, and would put it back into last_members_.
  if (describing_) stale_description_ = true;
  // Its own queue: a description the watch has in flight stays on admin_q_ for it.
  // Waited for `timeout_ms` only; unanswered by then, the request lives on in librdkafka
  // (kDescribeTimeoutMs, see above) and its answer goes to the queue destroyed below,
  // which drops it.
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk_);
  const char* groups[] = {group_.c_str()};
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk_, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
  char err[256];
  rd_kafka_AdminOptions_set_request_timeout(opts, kDescribeTimeoutMs, err, sizeof(err));
  rd_kafka_DescribeConsumerGroups(rk_, groups, 1, opts, q);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, static_cast<int>(timeout_ms));
  std::vector<GroupMember> members;
  std::vector<std::string> client_ids;
  std::string why = "no answer within " + std::to_string(timeout_ms) + " ms";
  if (ev != nullptr && read_description(ev, members, client_ids, why)) {
    announce_departures(client_ids);
  } else {
    host_.warn("kafka source: the committed offsets of the assigned partitions did not "
               "come within 1.5 s, and departed members could not be looked for: " + why);
  }
  if (ev != nullptr) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
}

void KafkaSource::announce_departures(const std::vector<std::string>& client_ids) {
  // As a set: a host restarted with the same state is in the group twice for a while
  // (its old member until the session expires, its new one), under one client id; when
  // the old one goes, the host has not left, and must not be fenced.
  std::vector<std::string> now = client_ids;
  std::sort(now.begin(), now.end());
  now.erase(std::unique(now.begin(), now.end()), now.end());
  if (members_known_) {
    std::vector<std::string> gone;
    std::set_difference(last_members_.begin(), last_members_.end(), now.begin(), now.end(),
                        std::back_inserter(gone));
    for (const auto& id : gone) {
      // Only this pipeline's hosts; a member that closed properly had no open transaction,
      // and fencing it anyway costs one short request.
      if (id.rfind(departure_prefix_, 0) != 0) continue;
      int heard = departed::announce(host_.pipeline(), id);
      host_.info("kafka source: member " + id + " left group " + group_ +
                 (heard > 0 ? "; the sink fences its transactional id" : ""));
    }
  }
  last_members_ = std::move(now);
  members_known_ = true;
}

bool KafkaSource::subscribed(const std::string& topic) {
  auto known = subscribed_.find(topic);
  if (known != subscribed_.end()) return known->second;
  bool match = false;
  for (const auto& t : topics_) {
    if (t.empty() || t[0] != '^') {
      match = t == topic;
    } else {
      // As librdkafka matches a subscription's pattern: POSIX extended.
      regex_t re;
      if (regcomp(&re, t.c_str(), REG_EXTENDED | REG_NOSUB) != 0) continue;
      match = regexec(&re, topic.c_str(), 0, nullptr, 0) == 0;
      regfree(&re);
    }
    if (match) break;
  }
  subscribed_.emplace(topic, match);
  return match;
}

void KafkaSource::update_standbys(const std::vector<GroupMember>& all_members) {
  char* self = rd_kafka_memberid(rk_);
  std::string self_id = self ? self : "";
  if (self) rd_kafka_mem_free(rk_, self);

  // This source's topics only: a group.id shared with another pipeline (other topics)
  // has members and partitions that are not this pipeline's, and warm copies of those
  // would tail changelogs of input this pipeline never reads.
  std::vector<GroupMember> members;
  for (GroupMember m : all_members) {
    m.owned.erase(std::remove_if(m.owned.begin(), m.owned.end(),
                                 [&](const TopicPartition& tp) { return !subscribed(tp.first); }),
                  m.owned.end());
    if (!m.owned.empty() || m.member_id == self_id) members.push_back(std::move(m));
  }
  StandbyPlan plan = plan_standbys(members, self_id, standby_replicas_);
  if (!plan.modelled && retry_describe(plan.why)) return;
  if (plan.modelled) {
    standby_why_.clear();
    describe_due_ms_ = now_ms() + kRefreshMs;
  }
  describe_retries_ = 0;
  if (plan.warm == standby_ && standby_planned_) return;
  standby_planned_ = true;
  standby_ = plan.warm;
  std::vector<sdk::Partition> parts;
  std::string names;
  for (const auto& [topic, number] : standby_) {
    int32_t id = id_for(topic, number);
    const PartState& p = parts_[static_cast<size_t>(id)];
    parts.push_back(sdk::Partition{id, p.name, p.topic, p.number, -1});
    names += (names.empty() ? "" : ", ") + p.name;
  }
  host_.info("kafka source: standby for " + std::to_string(members.size()) + " member(s), " +
             std::to_string(standby_replicas_) + " replica(s): " + (names.empty() ? "none" : names) +
             (plan.modelled ? "" : " (every partition not owned here: " + plan.why + ")"));
  host_.gauge("kafka_source_standby_partitions", static_cast<double>(parts.size()));
  sdk::Status st = host_.standby(parts);
  if (!st) host_.warn("kafka source: the host refused the standby set: " + st.message());
}

}  // namespace exactly::kafka
