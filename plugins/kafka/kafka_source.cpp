#include "kafka_source.hpp"

#include "departed_members.hpp"
#include "error_text.hpp"
#include "kafka_settings.hpp"
#include "cluster_endpoint.hpp"
#include "message_headers.hpp"
#include "txn_instance_id.hpp"
#include "visible_text.hpp"

#include <algorithm>
#include <initializer_list>

namespace exactly::kafka {

const ex_config_field kSourceFields[16] = {
    sdk::required("bootstrap.servers", EX_CFG_STRING,
                  "Kafka brokers (host:port,...), or `embedded` for the in-process demo cluster"),
    sdk::required("group.id", EX_CFG_STRING, "Consumer group; committed offsets live here"),
    sdk::field("topics", EX_CFG_LIST,
               "Topics to consume (a name starting with ^ is a regex); required unless `priority` "
               "is given"),
    sdk::field("priority", EX_CFG_LIST,
               "Instead of `topics`: topic names, highest priority first. While a level has "
               "backlog, the levels below it hand out only their `priority.min.share` (and are "
               "paused when it is 0)"),
    sdk::field("priority.min.share", EX_CFG_DOUBLE,
               "With `priority`: the fraction of the records handed out that each level below the "
               "one with backlog still gets, so it never starves; 0 = strict order (default 0.05)"),
    sdk::field("rdkafka", EX_CFG_MAP,
               "Any librdkafka consumer property, passed through (e.g. fetch.min.bytes). exactly's "
               "defaults: auto.offset.reset=earliest, socket.nagle.disable=true, "
               "partition.assignment.strategy=range, queued.min.messages=1000000 (so that "
               "the byte bound binds: librdkafka 2.0.2 stops fetching each time its prefetch "
               "queue reaches either, until the source wakes it; memory stays bounded by "
               "queued.max.messages.kbytes, 64 MiB for the queue the partitions share, plus "
               "one fetch of max.partition.fetch.bytes per partition and of fetch.max.bytes per "
               "broker)"),
    sdk::field("batch.size", EX_CFG_INT, "Most records returned by one poll", "10000"),
    sdk::field("poll.timeout", EX_CFG_DURATION, "Longest wait in one poll for the first record",
               "100"),
    sdk::field("open.timeout", EX_CFG_DURATION,
               "How long open() waits for the cluster to answer before failing (retriable)",
               "30000"),
    sdk::field("stop.when.idle", EX_CFG_DURATION,
               "End of input once no record arrived for this long (batch jobs, demos); 0 = never",
               "0"),
    sdk::field("fetch.stall.timeout", EX_CFG_DURATION,
               "A fetchable (not paused) partition from which no record arrived for this long "
               "although the broker holds records past its position is warned about and its "
               "fetch restarted at that position (and the topic's metadata refreshed); counted "
               "in kafka_source_fetch_restarts_total. One whose leader does not answer the "
               "check is warned about (with the client's latest error) and counted in "
               "kafka_source_fetch_stalls_unanswered_total. 0 = never checked",
               "30000"),
    sdk::field("static.membership", EX_CFG_BOOL,
               "Join with a group.instance.id kept in state.dir (one per host, the same YAML "
               "everywhere): a host that restarts within session.timeout.ms gets its partitions "
               "back without a rebalance",
               "false"),
    sdk::field("standby.replicas", EX_CFG_INT,
               "Keep warm copies of partitions this host does not own (stateful stages, e.g. "
               "dedupe with a changelog, tail their changelogs): those it would be assigned if "
               "any N other hosts left the group, so that a failover restores only a tail; "
               "0 = none",
               "0"),
    sdk::field("fence.departed", EX_CFG_BOOL,
               "With an exactly_once kafka sink using its default transactional.id: advertise "
               "that id as this member's client.id and, when a member leaves the group without "
               "closing (a killed host), have the sink fence the member's id, so the "
               "transaction it left open is aborted at once instead of after its "
               "transaction.timeout (off when rdkafka.client.id is set)",
               "true"),
    sdk::field("state.dir", EX_CFG_STRING,
               "Where static.membership keeps this host's instance id (the kafka sink's state.dir "
               "gives the same id)",
               "./state"),
    sdk::field("not.before.header", EX_CFG_STRING,
               "Header holding a record's not-before time (epoch milliseconds, e.g. "
               "exactly.not-before from the http sink's retry topic): a record whose time is "
               "ahead is not handed out until then; its partition waits (paused, positioned at "
               "it) while the others flow. Empty = off",
               ""),
};

namespace {

sdk::Status checkpoint_offsets(const sdk::Checkpoint& cp, KafkaCheckpoint& out) {
  out = KafkaCheckpoint{};
  if (cp.format.empty() && cp.data.empty()) return sdk::Status::ok();  // nothing committed yet
  if (cp.format != kCheckpointFormat)
    return sdk::Status::fatal("kafka source: positions in format '" + cp.format +
                              "' are not kafka positions (expected kafka.v1)");
  auto decoded = decode_checkpoint(cp.data);
  if (!decoded) return sdk::Status::fatal("kafka source: corrupt kafka.v1 positions");
  out = std::move(*decoded);
  return sdk::Status::ok();
}

}  // namespace

KafkaSource::KafkaSource(sdk::Host host, const sdk::Config& cfg) : ClientContext(host) {
  SourceSettings s = SourceSettings::parse(cfg);
  group_ = s.group;
  topics_ = s.topics;
  batch_size_ = s.batch_size;
  take_priority_levels(s);
  poll_timeout_ms_ = s.poll_timeout_ms;
  open_timeout_ms_ = s.open_timeout_ms;
  stop_when_idle_ms_ = s.stop_when_idle_ms;
  stall_timeout_ms_ = s.stall_timeout_ms;
  standby_replicas_ = s.standby_replicas;
  not_before_header_ = s.not_before_header;
  const auto& user = s.user;
  connection_ = connection_settings(user);

  ConfBuilder b;
  cluster_ = resolve_cluster(s.servers);
  if (cluster_.prepare_topic)
    for (const auto& t : topics_)
      if (t[0] != '^') cluster_.prepare_topic(t);  // a pattern names no topic to prepare
  apply_consumer_defaults(b, user, cluster_.consumer_settings);
  const std::string pipeline = host_.pipeline();
  static_member_ = s.static_membership;
  if (s.static_membership)
    b.set("group.instance.id",
          default_transactional_id(pipeline, txn_instance_id(s.state_dir, pipeline)),
          "static.membership");
  if (s.fence_departed && user.count("client.id") == 0) {
    std::string txn_id = departed::advertised_id(pipeline);
    if (!txn_id.empty()) {
      b.set("client.id", txn_id, "fence.departed");
      departure_prefix_ = default_transactional_id(pipeline, "");
    }
  }
  b.set("bootstrap.servers", cluster_.bootstrap, "bootstrap.servers");
  b.set("group.id", group_, "group.id");
  b.set("isolation.level", "read_committed", "rdkafka.isolation.level");
  b.set("enable.auto.commit", "false", "rdkafka.enable.auto.commit");
  b.set("enable.auto.offset.store", "false", "rdkafka.enable.auto.offset.store");
  std::string reset = b.get("auto.offset.reset");
  reset_latest_ = reset == "latest" || reset == "largest" || reset == "end";
  reset_error_ = reset == "error";
  b.route_callbacks(static_cast<ClientContext*>(this));
  rd_kafka_conf_set_rebalance_cb(b.raw(), &KafkaSource::rebalance_cb);
  instance_id_ = b.get("group.instance.id");
  rk_ = b.create(RD_KAFKA_CONSUMER);
  // Rebalances and error events are then served by consumer_poll, on the host's thread
  // (log lines come from librdkafka's own threads as they happen: route_callbacks).
  rd_kafka_poll_set_consumer(rk_);
  // One queue per priority level, so a level's records are not stuck behind another's.
  for (size_t l = 0; l < priority_.size(); ++l) level_q_.push_back(rd_kafka_queue_new(rk_));
  consumer_q_ = rd_kafka_queue_get_consumer(rk_);
  waker_ = std::make_unique<FetchWaker>(rk_);
  std::vector<std::string> unknown;
  faults_ = Faults::from_env({kSeekFault}, unknown);
  for (const auto& u : unknown)
    host_.warn("kafka source: EXACTLY_FAULTS entry '" + u + "' is not a fault of the kafka source "
               "(known: " + kSeekFault + ", or " + kSeekFault + "=N for the next N calls); ignored");
  if (faults_.armed())
    host_.warn("kafka source: test fault injection armed by EXACTLY_FAULTS: " + faults_.describe());
}

sdk::Status KafkaSource::validate(const sdk::Config& cfg) { return validate_source(cfg); }

KafkaSource::~KafkaSource() {
  close_consumer();
  if (admin_q_ != nullptr) rd_kafka_queue_destroy(admin_q_);
  for (auto* q : level_q_) rd_kafka_queue_destroy(q);
  if (consumer_q_ != nullptr) rd_kafka_queue_destroy(consumer_q_);
  rd_kafka_destroy_flags(rk_, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
}

void KafkaSource::observe_queue(uint64_t handed_bytes, size_t handed) {
  if (!waker_) return;
  // librdkafka bounds each queue that partitions forward to: the consumer queue, or a
  // priority level's.
  size_t queued = rd_kafka_queue_length(consumer_q_);
  for (auto* q : level_q_) queued = std::max(queued, rd_kafka_queue_length(q));
  waker_->observe(queued, handed_bytes, handed, now_ms());
  const uint64_t w = waker_->wakeups();
  if (w != reported_wakeups_) {
    host_.counter("kafka_source_fetch_wakeups_total", static_cast<double>(w - reported_wakeups_));
    reported_wakeups_ = w;
  }
}

void KafkaSource::close_consumer() {
  closing_ = true;
  if (waker_) waker_->stop();  // its requests must not outlive the consumer
  release_batch();
  drop_all_buffered();
  if (!opened_) return;
  opened_ = false;
  // Leave the group promptly (others get our partitions without waiting for the session
  // timeout), but never hang here: the close runs in the background and is bounded.
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk_);
  ErrorPtr e(rd_kafka_consumer_close_queue(rk_, q));
  if (!e) {
    // Served as events, not callbacks: fetched messages and errors can still arrive on
    // this queue, and 2.0.2 asserts when its callback serving meets one of those.
    const int64_t deadline = now_ms() + 10000;
    while (!rd_kafka_consumer_closed(rk_) && now_ms() < deadline) {
      rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 100);
      if (ev == nullptr) continue;
      // Leaving the group: whatever the rebalance, we own nothing afterwards.
      if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_REBALANCE) rd_kafka_assign(rk_, nullptr);
      rd_kafka_event_destroy(ev);
    }
    if (!rd_kafka_consumer_closed(rk_)) host_.warn("kafka source: consumer close timed out");
    // Kafka takes a static member's stop for a restart: it stays in the group, and the
    // partitions it had wait for it (QA: a scale-down stalled them with no word).
    if (static_member_) {
      char ms[32] = "?";  // librdkafka always has the property; set or defaulted
      size_t len = sizeof(ms);
      rd_kafka_conf_get(rd_kafka_conf(rk_), "session.timeout.ms", ms, &len);
      host_.info("kafka source: a static member (static.membership) stays in group " + group_ +
                 " when it stops: the partitions it had wait up to session.timeout.ms (" + ms +
                 " ms) for this host to come back, then move to the others");
    }
  } else {
    host_.warn("kafka source: close: " + describe(e.get()));
  }
  rd_kafka_queue_destroy(q);
}

sdk::Status KafkaSource::open(const std::optional<sdk::Checkpoint>& resume) {
  if (resume) {
    KafkaCheckpoint cp;
    sdk::Status st = checkpoint_offsets(*resume, cp);
    if (!st) return st;
    for (auto& o : cp.offsets) resume_[{o.topic, o.partition}] = o.offset;
  }
  sdk::Status st = check_cluster(rk_, cluster_.display, open_timeout_ms_,
                                 topics_, "topics", this);
  if (!st) return st;
  TplPtr sub(rd_kafka_topic_partition_list_new(static_cast<int>(topics_.size())));
  for (const auto& t : topics_)
    rd_kafka_topic_partition_list_add(sub.get(), t.c_str(), RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t err = rd_kafka_subscribe(rk_, sub.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
    return sdk::Status::config("topics", std::string("cannot subscribe: ") + rd_kafka_err2str(err));
  opened_ = true;
  return sdk::Status::ok();
}

int32_t KafkaSource::id_for(const std::string& topic, int32_t partition) {
  auto key = std::make_pair(topic, partition);
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  auto id = static_cast<int32_t>(parts_.size());
  PartState p;
  p.topic = topic;
  p.name = partition_name(topic, partition);
  p.number = partition;
  p.id = id;
  parts_.push_back(std::move(p));
  ids_.emplace(std::move(key), id);
  return id;
}

KafkaSource::PartState* KafkaSource::state_of(const rd_kafka_message_t* m) {
  if (m->rkt == last_rkt_ && m->partition == last_partition_ && m->rkt != nullptr)
    return &parts_[static_cast<size_t>(last_id_)];
  int32_t id = -1;
  auto it = rkt_ids_.find(m->rkt);
  if (it != rkt_ids_.end() && m->partition >= 0 &&
      static_cast<size_t>(m->partition) < it->second.size())
    id = it->second[static_cast<size_t>(m->partition)];
  if (id < 0) {
    auto f = ids_.find({rd_kafka_topic_name(m->rkt), m->partition});
    if (f == ids_.end() || m->partition < 0) return nullptr;
    auto& v = rkt_ids_[m->rkt];
    if (v.size() <= static_cast<size_t>(m->partition)) v.resize(static_cast<size_t>(m->partition) + 1, -1);
    v[static_cast<size_t>(m->partition)] = id = f->second;
  }
  last_rkt_ = m->rkt;
  last_partition_ = m->partition;
  last_id_ = id;
  return &parts_[static_cast<size_t>(id)];
}

void KafkaSource::release_batch() {
  for (auto* m : msgs_) rd_kafka_message_destroy(m);
  msgs_.clear();
}

void KafkaSource::drop_pending_of_unassigned() {
  auto keep = std::remove_if(msgs_.begin(), msgs_.end(), [&](rd_kafka_message_t* m) {
    PartState* p = state_of(m);
    if (p != nullptr && p->assigned) return false;
    rd_kafka_message_destroy(m);
    return true;
  });
  msgs_.erase(keep, msgs_.end());
  for (auto& p : parts_)
    if (!p.assigned) drop_buffered(p);
}

int64_t KafkaSource::reset_offset() const {
  return reset_latest_ ? RD_KAFKA_OFFSET_END : RD_KAFKA_OFFSET_BEGINNING;
}

// librdkafka 2.0.2 reads INVALID as "stored": it asks for the committed offset again
// (on_assign has just read it, stable) and, finding none, resets with an error code, which
// starts the offset query on a 100 ms timer (rd_kafka_offset_reset: `err ? 100 : 0`).
// BEGINNING is no better: its query starts at once, often before the partition has joined
// its broker thread, and then waits 500 ms ("no current leader"). A numeric offset starts
// the fetch as soon as the partition joins: one ListOffsets for the log starts (timestamp
// -2, one request per leader) made a fresh group's first record come ~100 ms sooner. At
// the latest end (and with auto.offset.reset: error) librdkafka keeps deciding; so it does
// when the lookup fails.
void KafkaSource::resolve_earliest(rd_kafka_topic_partition_list_t* list) {
  if (reset_latest_ || reset_error_) return;
  TplPtr ask(rd_kafka_topic_partition_list_new(list->cnt));
  for (int i = 0; i < list->cnt; ++i)
    if (list->elems[i].offset == RD_KAFKA_OFFSET_INVALID)
      rd_kafka_topic_partition_list_add(ask.get(), list->elems[i].topic, list->elems[i].partition)->offset =
          RD_KAFKA_OFFSET_BEGINNING;
  if (ask->cnt == 0) return;
  if (rd_kafka_offsets_for_times(rk_, ask.get(), 2000) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
  std::string starts;
  int named = 0;
  for (int i = 0; i < ask->cnt; ++i) {
    const auto& a = ask->elems[i];
    if (a.err != RD_KAFKA_RESP_ERR_NO_ERROR || a.offset < 0) continue;
    rd_kafka_topic_partition_t* tp = rd_kafka_topic_partition_list_find(list, a.topic, a.partition);
    if (tp == nullptr) continue;
    tp->offset = a.offset;
    if (++named <= 8)
      starts += (starts.empty() ? "" : ", ") + std::string(a.topic) + "-" + std::to_string(a.partition) +
                " at " + std::to_string(a.offset);
  }
  if (named > 8) starts += " and " + std::to_string(named - 8) + " more";
  if (named > 0)
    host_.info("kafka source: nothing committed for " + starts +
               ": starting at the log start (auto.offset.reset: earliest)");
}

void KafkaSource::rebalance_cb(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                               rd_kafka_topic_partition_list_t* parts, void* opaque) {
  auto* self = static_cast<KafkaSource*>(static_cast<ClientContext*>(opaque));
  try {
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      self->on_assign(parts);
    } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
      self->on_revoke(parts);
    } else {
      self->host_.error(std::string("kafka source: rebalance failed: ") + rd_kafka_err2str(err));
      rd_kafka_assign(rk, nullptr);
    }
  } catch (const std::exception& e) {
    // Nothing may unwind through librdkafka; the next poll reports it.
    self->pending_ = sdk::Status::fatal(std::string("kafka source: rebalance: ") + e.what());
    rd_kafka_assign(rk, nullptr);
  }
}

void KafkaSource::on_assign(rd_kafka_topic_partition_list_t* parts) {
  if (closing_) {
    rd_kafka_assign(rk_, parts);
    return;
  }
  TplPtr list(rd_kafka_topic_partition_list_copy(parts));
  // The host wants the committed position of each partition, and positions a sink stored
  // with its output (open(resume)) must win over the group's offsets.
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
  const int64_t deadline = now_ms() + std::max<int64_t>(open_timeout_ms_, 5000);
  // A member killed after sending its offsets to its transaction, before committing it,
  // leaves those offsets unstable until the transaction ends, and a read_committed
  // fetch waits for that. The group watch would see the member gone only after this
  // assignment, too late to fence it: if the read does not answer soon, the group is
  // described here (at most 2 s) and departed members are announced (their sink fences
  // them); one more read follows it even past the deadline.
  bool departures_checked = departure_prefix_.empty() || !members_known_;
  bool after_describe = false;  // one more read is owed after the description
  while (err == RD_KAFKA_RESP_ERR__TIMED_OUT && (now_ms() < deadline || after_describe)) {
    after_describe = false;
    err = rd_kafka_committed(rk_, list.get(), departures_checked ? 5000 : 1500);
    if (err == RD_KAFKA_RESP_ERR__TIMED_OUT && !departures_checked) {
      departures_checked = true;
      announce_departures_now(2000);
      after_describe = true;
    }
  }
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    // Going on blind would hand the stages a partition without its committed position,
    // and a stateful stage could not tell a stale store from a current one: rebuild the
    // consumer and ask again instead.
    pending_ = sdk::Status::fatal(std::string("kafka source: cannot read the committed offsets "
                                              "of the assigned partitions (") +
                                  rd_kafka_err2str(err) + "); rejoining the group");
    rd_kafka_assign(rk_, nullptr);
    return;
  }
  std::vector<sdk::Partition> host_parts;
  host_parts.reserve(static_cast<size_t>(list->cnt));
  std::vector<int32_t> added_ids;  // not pointers: id_for() may grow parts_
  for (int i = 0; i < list->cnt; ++i) {
    auto& tp = list->elems[i];
    int32_t id = id_for(tp.topic, tp.partition);
    PartState& p = parts_[static_cast<size_t>(id)];
    int64_t start = (tp.err == RD_KAFKA_RESP_ERR_NO_ERROR && tp.offset >= 0)
                        ? tp.offset
                        : RD_KAFKA_OFFSET_INVALID;
    // Positions a sink stored with its output (open(resume)) win over older group
    // offsets; group offsets ahead of them are another member's later progress (the
    // host mirrors every sink-stored round into the group), so the later one wins.
    auto r = resume_.find({p.topic, p.number});
    if (r != resume_.end()) start = std::max<int64_t>(start, r->second);
    if (prioritized()) p.level = level_of(p.topic);
    tp.err = RD_KAFKA_RESP_ERR_NO_ERROR;
    tp.offset = start;  // INVALID: nothing committed (resolve_earliest, below)
    p.assigned = true;
    p.start = start;
    p.next = start;
    p.assigned_at = start;
    p.rd_paused = false;
    p.not_before_ms = 0;
    p.progress_ms = now_ms();
    p.unanswered_since_ms = 0;
    added_ids.push_back(id);
    host_parts.push_back(sdk::Partition{id, p.name, p.topic, p.number, start >= 0 ? start : -1});
  }
  sdk::Status st = host_.assigned(host_parts);
  if (!st && pending_) pending_ = st;
  std::vector<PartState*> added;
  for (int32_t id : added_ids) added.push_back(&parts_[static_cast<size_t>(id)]);
  if (prioritized()) forward_to_levels(added);  // before the fetchers start
  // librdkafka keeps a partition's application pause across unassign and assign: one that
  // was paused when it was revoked (a not-before wait, a hold, a priority level) would
  // come back paused while rd_paused says it is not. Every one is resumed, and BEFORE the
  // assign: librdkafka 2.0.2 starts a partition's fetch on its main thread some time
  // after rd_kafka_assign() returns, and any pause or resume issued in between (even a
  // resume of a partition that is not paused; fixed upstream in 2.3.1) makes that start
  // outdated: the partition is then never fetched, silently (seen in a latency benchmark
  // run and in one of 19 fresh starts of a loop; docs/benchmarks.md, "Fetch starts"). A
  // resume before the assign is older than the start. A partition never assigned before
  // has nothing to resume (no-op).
  rd_kafka_resume_partitions(rk_, list.get());
  resolve_earliest(list.get());
  err = rd_kafka_assign(rk_, list.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR && pending_)
    pending_ = sdk::Status::fatal(std::string("kafka source: assign failed: ") +
                                  rd_kafka_err2str(err));
  // Whole-source pause, and the priority levels below the one with backlog.
  sdk::Status paused_st = sdk::Status::ok();
  if (prioritized()) {
    priority_on_assign(added);
    paused_st = apply_priority(priority_plan());
  } else {
    paused_st = apply_pauses(added);
  }
  if (!paused_st) host_.warn(paused_st.message());
  if (watches_group()) {
    describe_due_ms_ = now_ms() + 200;
    describe_retries_ = 0;
  }
  host_.gauge("kafka_source_assigned_partitions",
              static_cast<double>(std::count_if(parts_.begin(), parts_.end(),
                                                [](const PartState& p) { return p.assigned; })));
}

void KafkaSource::on_revoke(rd_kafka_topic_partition_list_t* parts) {
  if (!closing_) {
    const bool lost = rd_kafka_assignment_lost(rk_) != 0;
    if (lost)
      host_.warn("kafka source: partitions were lost (session timed out); their round "
                 "cannot commit and will be replayed by the new owner");
    std::vector<sdk::Partition> host_parts;
    for (int i = 0; i < parts->cnt; ++i) {
      auto it = ids_.find({parts->elems[i].topic, parts->elems[i].partition});
      if (it == ids_.end()) continue;
      const PartState& p = parts_[static_cast<size_t>(it->second)];
      if (!p.assigned) continue;
      host_parts.push_back(sdk::Partition{p.id, p.name, p.topic, p.number,
                                          lost ? EX_PARTITION_LOST : p.next >= 0 ? p.next : -1});
    }
    // The host commits the running round inside this call, while the partitions are
    // still ours (checkpoint() still reports them).
    sdk::Status st = host_.revoked(host_parts);
    if (!st && pending_) pending_ = st;
  }
  rd_kafka_assign(rk_, nullptr);
  for (int i = 0; i < parts->cnt; ++i) {
    auto it = ids_.find({parts->elems[i].topic, parts->elems[i].partition});
    if (it == ids_.end()) continue;
    PartState& p = parts_[static_cast<size_t>(it->second)];
    p.assigned = false;
    p.held = false;
    p.rd_paused = p.prio_paused = false;
    p.not_before_ms = 0;
    p.start = p.next = p.assigned_at = RD_KAFKA_OFFSET_INVALID;
  }
  drop_pending_of_unassigned();
  host_.gauge("kafka_source_assigned_partitions",
              static_cast<double>(std::count_if(parts_.begin(), parts_.end(),
                                                [](const PartState& p) { return p.assigned; })));
}

std::string KafkaSource::fatal_text() {
  const std::string text = "kafka source: " + fatal_reason(rk_);
  char reason[8];
  if (rd_kafka_fatal_error(rk_, reason, sizeof(reason)) != RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID) return text;
  return fit_error(text, fenced_instance_hint(instance_id_), EX_ERROR_MESSAGE_MAX);
}

sdk::Status KafkaSource::handle_message_error(rd_kafka_message_t* m) {
  switch (m->err) {
    case RD_KAFKA_RESP_ERR__PARTITION_EOF:
      return sdk::Status::ok();
    case RD_KAFKA_RESP_ERR__FATAL:
      fatal_.store(true);
      return sdk::Status::fatal(fatal_text());
    // An ACL: no retry reads the topic, and a warning per fetch let a pipeline with
    // stop.when.idle end "idle" with the input unread (exit 0).
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED: {
      const std::string topic = m->rkt != nullptr ? rd_kafka_topic_name(m->rkt) : std::string("?");
      return sdk::Status::config("topics", "kafka source: " + cluster_.display +
                                               " does not let this consumer read topic " + topic +
                                               " (TOPIC_AUTHORIZATION_FAILED: an ACL). Fix: " +
                                               acl_command(connection_, "--operation Read --operation Describe",
                                                           "--topic " + topic));
    }
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
      return sdk::Status::config("group.id", "kafka source: " + cluster_.display +
                                                 " does not let this consumer use group " + group_ +
                                                 " (GROUP_AUTHORIZATION_FAILED: an ACL). Fix: " +
                                                 acl_command(connection_, "--operation Read", "--group " + group_));
    default: {
      std::string where;
      if (m->rkt != nullptr)
        where = std::string(" (") + rd_kafka_topic_name(m->rkt) + " [" +
                std::to_string(m->partition) + "])";
      host_.warn(std::string("kafka source: consumer error") + where + ": " +
                 rd_kafka_message_errstr(m));
      recent_error_ = std::string(rd_kafka_err2name(m->err)) + where + ": " + rd_kafka_message_errstr(m);
      recent_error_ms_ = now_ms();
      return sdk::Status::ok();
    }
  }
}

sdk::Status KafkaSource::poll(int timeout_ms, std::vector<ex_record>& out, bool& end_of_input) {
  end_of_input = false;
  release_batch();
  if (!opened_) return sdk::Status::fatal("kafka source: poll before open");
  if (fatal()) return sdk::Status::fatal(fatal_text());
  if (!pending_) return std::exchange(pending_, sdk::Status::ok());
  if (watches_group()) group_watch_step();
  if (waits_for_not_before()) {
    sdk::Status st = release_not_before();
    if (!st) return st;
  }

  int64_t wait = timeout_ms < 0 ? poll_timeout_ms_ : std::min<int64_t>(timeout_ms, poll_timeout_ms_);
  const int64_t deadline = now_ms() + wait;
  sdk::Status failure;
  PriorityPlanner::Plan plan;
  if (prioritized()) {
    plan = priority_plan();
    sdk::Status st = apply_priority(plan);
    if (!st) return st;
    hand_buffered(plan);
    report_priority();
  }
  // Records buffered for a later poll count too: a poll takes at most a batch from
  // librdkafka, so the buffers stay bounded.
  size_t pulled = 0;
  while (msgs_.size() < batch_size_ && pulled < batch_size_) {
    if (prioritized()) {
      failure = take_from_levels(plan);
      if (!failure || msgs_.size() >= batch_size_) break;
    }
    int t = msgs_.empty() ? static_cast<int>(std::max<int64_t>(0, deadline - now_ms())) : 0;
    // Records of the levels arrive on their own queues: look at them between short waits.
    if (prioritized()) t = std::min(t, 5);
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, t);
    if (m == nullptr) {
      // A served rebalance or log event can end the wait early.
      if (msgs_.empty() && pending_ && !fatal() && now_ms() < deadline) continue;
      break;
    }
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      failure = handle_message_error(m);
      rd_kafka_message_destroy(m);
      if (!failure) break;
      continue;
    }
    PartState* p = state_of(m);
    if (p == nullptr || !p->assigned || p->held) {
      rd_kafka_message_destroy(m);
      continue;
    }
    ++pulled;
    if (prioritized() && !admit(m, *p, plan)) {
      if (!pending_) break;
      continue;
    }
    msgs_.push_back(m);
    if (!pending_) break;
  }
  if (failure && !pending_) failure = std::exchange(pending_, sdk::Status::ok());
  if (failure && fatal()) failure = sdk::Status::fatal(fatal_text());
  if (!failure) {
    // Messages fetched but never handed out: put the fetch positions back where the
    // host's view ends so nothing is skipped even if the host did not rewind.
    std::vector<std::pair<PartState*, int64_t>> back;
    for (auto* m : msgs_) {
      PartState* p = state_of(m);
      if (p == nullptr || !p->assigned) continue;
      int64_t target = p->next >= 0 ? p->next : m->offset;
      auto it = std::find_if(back.begin(), back.end(), [&](auto& b) { return b.first == p; });
      if (it == back.end()) back.emplace_back(p, target);
      else it->second = std::min(it->second, target);
    }
    // Buffered records were fetched past the host's view too (seek_all drops them).
    for (auto& p : parts_) {
      if (p.buffered.empty() || !p.assigned) continue;
      int64_t target = p.next >= 0 ? p.next : p.buffered.front()->offset;
      auto it = std::find_if(back.begin(), back.end(), [&](auto& b) { return b.first == &p; });
      if (it == back.end()) back.emplace_back(&p, target);
      else it->second = std::min(it->second, target);
    }
    release_batch();
    if (!back.empty()) seek_all(back);
    return failure;
  }

  if (waits_for_not_before()) {
    sdk::Status st = hold_not_before();
    if (!st) host_.warn(st.message());  // the partition goes on; its next record is checked again
  }
  // headers_ is sized before any record points into it; each message's list is looked
  // up once (librdkafka parses it on the first call).
  size_t nh = 0;
  msg_headers_.resize(msgs_.size());
  for (size_t i = 0; i < msgs_.size(); ++i) {
    rd_kafka_headers_t* h = headers_of(msgs_[i]);
    msg_headers_[i] = h;
    if (h != nullptr) nh += rd_kafka_header_cnt(h);
  }
  headers_.clear();
  headers_.reserve(nh);
  out.reserve(out.size() + msgs_.size());
  const int64_t polled_ms = msgs_.empty() ? 0 : now_ms();
  uint64_t value_bytes = 0;
  for (size_t i = 0; i < msgs_.size(); ++i) {
    rd_kafka_message_t* m = msgs_[i];
    PartState* p = state_of(m);
    value_bytes += m->len;
    ex_record r{};
    r.key = m->key ? ex_bytes{static_cast<const uint8_t*>(m->key), m->key_len} : sdk::null_bytes();
    r.value = m->payload ? ex_bytes{static_cast<const uint8_t*>(m->payload), m->len}
                         : sdk::null_bytes();
    if (rd_kafka_headers_t* h = msg_headers_[i]) {
      size_t first = headers_.size();
      const char* name = nullptr;
      const void* val = nullptr;
      size_t size = 0;
      for (size_t j = 0; rd_kafka_header_get_all(h, j, &name, &val, &size) ==
                         RD_KAFKA_RESP_ERR_NO_ERROR;
           ++j) {
        ex_header x{};
        x.key = ex_bytes{reinterpret_cast<const uint8_t*>(name), std::char_traits<char>::length(name)};
        x.value = val ? ex_bytes{static_cast<const uint8_t*>(val), size} : sdk::null_bytes();
        headers_.push_back(x);
      }
      r.headers = headers_.data() + first;
      r.header_count = static_cast<uint32_t>(headers_.size() - first);
    }
    r.partition = p->id;
    r.offset = m->offset;
    // A partition without a committed offset starts where its first record was: an
    // abort before the first commit rewinds there, not to auto.offset.reset again.
    if (p->start < 0) p->start = m->offset;
    rd_kafka_timestamp_type_t tstype;
    r.timestamp_ms = rd_kafka_message_timestamp(m, &tstype);
    p->next = m->offset + 1;
    p->progress_ms = polled_ms;
    p->unanswered_since_ms = 0;
    out.push_back(r);
  }
  if (!msgs_.empty()) host_.counter("kafka_source_records_total", static_cast<double>(msgs_.size()));
  observe_queue(value_bytes, msgs_.size());
  if (prioritized()) priority_handed(plan);
  // A bounded run: the topic has been quiet long enough to call it drained.
  report_lag();
  check_stalls();
  // The clock runs only while partitions are assigned and none is held back by a stage
  // (joining the group or waiting for a restore is not idling).
  if (stop_when_idle_ms_ > 0) {
    bool any = std::any_of(parts_.begin(), parts_.end(), [](const PartState& p) { return p.assigned; });
    bool held = std::any_of(parts_.begin(), parts_.end(),
                            [](const PartState& p) { return p.held || p.not_before_ms > 0; });
    // Nor is a priority level waiting for its turn.
    bool waiting = prioritized() && (plan.leader >= 0 || buffered_total() > 0);
    if (!msgs_.empty() || last_record_ms_ == 0 || !any || held || waiting)
      last_record_ms_ = now_ms();
    else if (now_ms() - last_record_ms_ >= stop_when_idle_ms_) end_of_input = true;
  }
  return sdk::Status::ok();
}

// Consumer lag per partition from librdkafka's cached high watermarks (no request to
// the broker), at most once a second.
void KafkaSource::report_lag() {
  int64_t now = now_ms();
  if (now - last_lag_report_ms_ < 1000) return;
  last_lag_report_ms_ = now;
  for (const auto& p : parts_) {
    if (!p.assigned || p.next < 0) continue;
    int64_t lo = 0, hi = 0;
    if (rd_kafka_get_watermark_offsets(rk_, p.topic.c_str(), p.number, &lo, &hi) !=
            RD_KAFKA_RESP_ERR_NO_ERROR || hi < 0)
      continue;
    std::string labels = "partition=" + p.name;
    host_.gauge("kafka_source_consumer_lag", static_cast<double>(std::max<int64_t>(0, hi - p.next)),
                labels.c_str());
  }
}

sdk::Status KafkaSource::checkpoint_at(const std::vector<sdk::Partition>& parts,
                                       sdk::Checkpoint& out) {
  std::map<int32_t, int64_t> at;
  for (const auto& x : parts) at[x.id] = x.start_offset;
  return encode_positions(at, out);
}

sdk::Status KafkaSource::checkpoint(sdk::Checkpoint& out) { return encode_positions({}, out); }

sdk::Status KafkaSource::encode_positions(const std::map<int32_t, int64_t>& lowered,
                                          sdk::Checkpoint& out) {
  KafkaCheckpoint cp;
  GroupMetadataPtr md(rd_kafka_consumer_group_metadata(rk_));
  if (md) {
    void* buf = nullptr;
    size_t size = 0;
    ErrorPtr e(rd_kafka_consumer_group_metadata_write(md.get(), &buf, &size));
    if (e) return sdk::Status::fatal("kafka source: cannot serialize group metadata: " + describe(e.get()));
    cp.group_metadata.assign(static_cast<const char*>(buf), size);
    rd_kafka_mem_free(rk_, buf);
  }
  for (const auto& p : parts_) {
    if (!p.assigned || p.next < 0) continue;
    auto low = lowered.find(p.id);
    int64_t at = low != lowered.end() && low->second >= 0 ? std::min(low->second, p.next) : p.next;
    cp.offsets.push_back(TopicOffset{p.topic, p.number, at});
  }
  out.format = std::string(kCheckpointFormat);
  out.data = encode_checkpoint(cp);
  return sdk::Status::ok();
}

sdk::Status KafkaSource::commit(const sdk::Checkpoint& positions) {
  KafkaCheckpoint cp;
  sdk::Status st = checkpoint_offsets(positions, cp);
  if (!st) return st;
  // Only partitions still ours: committing a revoked one would overwrite its new owner.
  TplPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(cp.offsets.size())));
  std::vector<PartState*> touched;
  for (const auto& o : cp.offsets) {
    auto it = ids_.find({o.topic, o.partition});
    if (it == ids_.end() || !parts_[static_cast<size_t>(it->second)].assigned) continue;
    rd_kafka_topic_partition_list_add(list.get(), o.topic.c_str(), o.partition)->offset = o.offset;
    touched.push_back(&parts_[static_cast<size_t>(it->second)]);
  }
  if (list->cnt == 0) return sdk::Status::ok();
  rd_kafka_resp_err_t err = rd_kafka_commit(rk_, list.get(), 0 /* synchronous */);
  if (err == RD_KAFKA_RESP_ERR__NO_OFFSET) return sdk::Status::ok();
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (err == RD_KAFKA_RESP_ERR__FATAL) return sdk::Status::fatal(fatal_text());
    return sdk::Status::retriable(std::string("kafka source: committing offsets failed: ") +
                                  rd_kafka_err2str(err));
  }
  for (int i = 0; i < list->cnt; ++i) touched[static_cast<size_t>(i)]->start = list->elems[i].offset;
  return sdk::Status::ok();
}

sdk::Status KafkaSource::rewind(const sdk::Checkpoint& positions) {
  release_batch();
  KafkaCheckpoint cp;
  sdk::Status st = checkpoint_offsets(positions, cp);
  if (!st) return st;
  std::map<std::pair<std::string, int32_t>, int64_t> at;
  for (const auto& o : cp.offsets) at[{o.topic, o.partition}] = o.offset;
  std::vector<std::pair<PartState*, int64_t>> targets;
  std::vector<PartState*> woken;
  for (auto& p : parts_) {
    if (!p.assigned) continue;
    auto it = at.find({p.topic, p.number});
    int64_t target = it != at.end() ? it->second : p.start >= 0 ? p.start : reset_offset();
    // The host's last committed positions may be from an earlier assignment of this
    // partition; another member has moved it on since, and going back there would
    // replay what that member committed.
    if (p.assigned_at >= 0 && target < p.assigned_at) target = p.assigned_at;
    // A wait for a record's not-before time holds only at that record: rewound before
    // it, the records in between are due now (the record is met and waited for again).
    if (p.not_before_ms > 0 && target != p.next) {
      p.not_before_ms = 0;
      woken.push_back(&p);
    }
    targets.emplace_back(&p, target);
    if (target >= 0) p.start = target;
    p.next = target >= 0 ? target : RD_KAFKA_OFFSET_INVALID;
  }
  st = seek_all(targets);
  if (!st || woken.empty()) return st;
  return apply_pauses(woken);
}

sdk::Status KafkaSource::seek_all(const std::vector<std::pair<PartState*, int64_t>>& targets) {
  if (targets.empty()) return sdk::Status::ok();
  TplPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(targets.size())));
  for (const auto& [p, off] : targets) {
    rd_kafka_topic_partition_list_add(list.get(), p->topic.c_str(), p->number)->offset = off;
    drop_buffered(*p);  // fetching restarts at the target: they would come again
  }
  std::string why;
  if (faults_.fire(kSeekFault)) {
    why = std::string("fault injected by EXACTLY_FAULTS (") + kSeekFault + ")";
  } else {
    ErrorPtr e(rd_kafka_seek_partitions(rk_, list.get(), 10000));
    if (e) why = describe(e.get());
  }
  for (int i = 0; i < list->cnt && why.empty(); ++i)
    if (list->elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR)
      why = std::string(list->elems[i].topic) + " [" + std::to_string(list->elems[i].partition) +
            "]: " + rd_kafka_err2str(list->elems[i].err);
  if (why.empty()) return sdk::Status::ok();

  // A partition whose fetcher has not started yet cannot seek (__STATE). Re-assigning the
  // whole assignment at explicit offsets restarts every fetcher there instead.
  host_.info("kafka source: seek failed (" + why + "); re-assigning at the target offsets");
  drop_all_buffered();  // every partition restarts at its position
  TplPtr all(rd_kafka_topic_partition_list_new(static_cast<int>(parts_.size())));
  for (auto& p : parts_) {
    if (!p.assigned) continue;
    int64_t off = p.next >= 0 ? p.next : RD_KAFKA_OFFSET_INVALID;
    for (const auto& [tp, o] : targets)
      if (tp == &p) off = o;
    rd_kafka_topic_partition_list_add(all.get(), p.topic.c_str(), p.number)->offset = off;
  }
  resolve_earliest(all.get());  // one never read nor committed: as at its first assign
  rd_kafka_resp_err_t err = rd_kafka_assign(rk_, all.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
    return sdk::Status::retriable(std::string("kafka source: cannot reposition partitions: ") +
                                  rd_kafka_err2str(err));
  // Fresh fetchers: pause again what should be (whole source, held, priority), and
  // resume the rest explicitly: librdkafka keeps a partition's application pause across
  // a re-assign, so one paused while held (a restore) stayed paused for good after it,
  // while this source took it for fetching (an exploratory chaos run: a partition
  // stalled for minutes, the fetch restarts could not move it).
  TplPtr again(rd_kafka_topic_partition_list_new(static_cast<int>(parts_.size())));
  TplPtr go(rd_kafka_topic_partition_list_new(static_cast<int>(parts_.size())));
  for (auto& p : parts_) {
    if (!p.assigned) continue;
    p.rd_paused = wants_pause(p, paused_);
    rd_kafka_topic_partition_list_add(p.rd_paused ? again.get() : go.get(), p.topic.c_str(), p.number);
  }
  if (again->cnt > 0) rd_kafka_pause_partitions(rk_, again.get());
  if (go->cnt > 0) rd_kafka_resume_partitions(rk_, go.get());
  return sdk::Status::ok();
}

sdk::Status KafkaSource::pause_partitions(const std::vector<sdk::Partition>& parts, bool paused) {
  std::vector<PartState*> touched;
  std::vector<std::pair<PartState*, int64_t>> targets;
  for (const auto& x : parts) {
    auto it = ids_.find({x.topic, x.number});
    if (it == ids_.end()) continue;
    PartState& p = parts_[static_cast<size_t>(it->second)];
    if (!p.assigned) continue;
    touched.push_back(&p);
    drop_buffered(p);
    // Nothing of it was handed out while held: it continues (and checkpoints) at the
    // position the stage was given.
    p.next = x.start_offset >= 0 ? x.start_offset : RD_KAFKA_OFFSET_INVALID;
    p.held = paused;
    p.not_before_ms = 0;  // it restarts at `start` and meets the record again
    if (!paused) targets.emplace_back(&p, x.start_offset >= 0 ? x.start_offset : reset_offset());
  }
  if (touched.empty()) return sdk::Status::ok();
  // Records of it in the batch just handed out are dropped by the host (it continues
  // from the start given here); later ones are dropped by poll().
  if (paused) return apply_pauses(touched);
  sdk::Status st = seek_all(targets);
  if (!st) return st;
  // Resumed unless the whole source or its priority level still waits.
  return apply_pauses(touched, /*sought=*/true);
}

sdk::Status KafkaSource::pause(bool paused) {
  if (paused == paused_) return sdk::Status::ok();
  paused_ = paused;
  std::vector<PartState*> all;
  for (auto& p : parts_)
    if (p.assigned) all.push_back(&p);
  return apply_pauses(all);
}

sdk::Status KafkaSource::apply_pauses(const std::vector<PartState*>& parts, bool sought) {
  std::vector<PartState*> to_pause, to_resume;
  for (PartState* p : parts) {
    if (!p->assigned) continue;
    const bool want = wants_pause(*p, paused_);
    if (want && !p->rd_paused) to_pause.push_back(p);
    else if (!want && p->rd_paused) to_resume.push_back(p);
  }
  if (!to_pause.empty()) {
    TplPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(to_pause.size())));
    for (PartState* p : to_pause) rd_kafka_topic_partition_list_add(list.get(), p->topic.c_str(), p->number);
    rd_kafka_resp_err_t err = rd_kafka_pause_partitions(rk_, list.get());
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
      return sdk::Status::retriable(std::string("kafka source: pause: ") + rd_kafka_err2str(err));
    for (PartState* p : to_pause) p->rd_paused = true;
  }
  if (!to_resume.empty()) return resume_checked(std::move(to_resume), sought);
  return sdk::Status::ok();
}

// After a pause librdkafka fetches on from the last message it returned to this source,
// which is where the source's view goes on (next, or after what it buffered) unless
// records were dropped meanwhile (a rewind, a hold): there it seeks first. A partition
// that has handed out nothing yet is sought to where it starts (its committed offset, or
// the earliest): a pause that came soon after its assignment may have cancelled the
// start of its fetch (see on_assign), and a plain resume would not start it again.
sdk::Status KafkaSource::resume_checked(std::vector<PartState*> parts, bool sought) {
  TplPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(parts.size())));
  for (PartState* p : parts) rd_kafka_topic_partition_list_add(list.get(), p->topic.c_str(), p->number);
  std::vector<std::pair<PartState*, int64_t>> seeks;
  if (!sought && rd_kafka_position(rk_, list.get()) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    for (size_t i = 0; i < parts.size(); ++i) {
      PartState* p = parts[i];
      int64_t expected = !p->buffered.empty() ? p->buffered.back()->offset + 1 : p->next;
      if (expected < 0) {
        const int64_t at = resume_point(*p);
        if (at != RD_KAFKA_OFFSET_INVALID && list->elems[i].offset != at) seeks.emplace_back(p, at);
        continue;
      }
      if (list->elems[i].offset != expected)
        seeks.emplace_back(p, p->next >= 0 ? p->next : p->buffered.front()->offset);
    }
  }
  sdk::Status st = seek_all(seeks);
  if (!st) return st;
  rd_kafka_resp_err_t err = rd_kafka_resume_partitions(rk_, list.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
    return sdk::Status::retriable(std::string("kafka source: resume: ") + rd_kafka_err2str(err));
  const int64_t now = now_ms();
  for (PartState* p : parts) {
    p->rd_paused = false;
    p->last_seen_ms = now;  // the drain clock starts when fetching does
  }
  return sdk::Status::ok();
}

}  // namespace exactly::kafka
