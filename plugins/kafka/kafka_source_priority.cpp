// The kafka source's priority levels (`priority: [t.high, t.normal, t.low]`): while a
// level has backlog, the levels below it hand out only what `priority.min.share` owes
// them, and are paused in librdkafka when that share is 0 (priority_planner.hpp decides;
// this file measures backlog, pauses and resumes, and takes records level by level).
//
// Each level's partitions forward their records to the level's own librdkafka queue, so
// a lower level's share is there to take even while a higher level's prefetch is long;
// what a lower level is not owed yet stays in its queue. Records that still come through
// the consumer queue (a partition without a queue of its own) wait in `buffered`.
//
// Backlog of a partition: the high watermark librdkafka last saw (the last stable offset
// under read_committed; queried once at assignment) above the source's next offset, or
// records fetched and waiting. A partition that is fetching but has delivered nothing for
// kDrainQuietMs (with nothing in its level's queue) counts as drained even when the
// watermark is ahead: the gap is then a transaction marker or aborted records, which a
// read_committed consumer never sees.
// A paused level's watermark is not refreshed; that only matters once every level above
// it is drained, and then it fetches again and its watermark is current.
#include "kafka_source.hpp"
#include "visible_text.hpp"

#include <algorithm>

namespace exactly::kafka {

namespace {
constexpr int64_t kDrainQuietMs = 1000;
}

// Levels from the settings (kafka_settings.cpp checked them): topics_ is already the
// priority list.
void KafkaSource::take_priority_levels(const SourceSettings& s) {
  if (s.priority.empty()) return;
  priority_ = s.priority;
  min_share_ = s.min_share;
  planner_.emplace(priority_.size(), min_share_, batch_size_);
}

int KafkaSource::level_of(const std::string& topic) const {
  auto it = std::find(priority_.begin(), priority_.end(), topic);
  return it == priority_.end() ? -1 : static_cast<int>(it - priority_.begin());
}

// librdkafka keeps an application's forwarding across assignments; records that still
// reach the consumer queue (a partition queue it could not give) are taken from there.
void KafkaSource::forward_to_levels(const std::vector<PartState*>& added) {
  for (PartState* p : added) {
    if (p->level < 0) continue;
    rd_kafka_queue_t* q = rd_kafka_queue_get_partition(rk_, p->topic.c_str(), p->number);
    if (q == nullptr) {
      // Still correct (its records come through the consumer queue and wait there
      // behind the others' prefetch), only the order is coarser.
      host_.warn("kafka source: no queue of its own for " + p->name + "; its priority is coarser");
      continue;
    }
    rd_kafka_queue_forward(q, level_q_[static_cast<size_t>(p->level)]);
    rd_kafka_queue_destroy(q);
  }
}

size_t KafkaSource::level_buffered(int level) const {
  size_t n = 0;
  for (const auto& q : parts_)
    if (q.level == level) n += q.buffered.size();
  return n;
}

sdk::Status KafkaSource::take_from_levels(PriorityPlanner::Plan& plan) {
  // What lower levels are owed first: a batch the leader could fill alone keeps room.
  for (bool limited : {true, false}) {
    for (size_t l = 0; l < level_q_.size(); ++l) {
      if ((plan.allowance[l] != PriorityPlanner::kUnlimited) != limited) continue;
      while (msgs_.size() < batch_size_) {
        // A lower level takes what it is owed; the rest waits in its queue (fetched
        // ahead, bounded by librdkafka's prefetch limits).
        if (limited && (plan.allowance[l] == 0 || level_buffered(static_cast<int>(l)) >= batch_size_))
          break;
        rd_kafka_message_t* m = rd_kafka_consume_queue(level_q_[l], 0);
        if (m == nullptr) break;
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
          sdk::Status st = handle_message_error(m);
          rd_kafka_message_destroy(m);
          if (!st) return st;
          continue;
        }
        PartState* p = state_of(m);
        if (p == nullptr || !p->assigned || p->held) {
          rd_kafka_message_destroy(m);
          continue;
        }
        if (admit(m, *p, plan)) msgs_.push_back(m);
      }
    }
  }
  return sdk::Status::ok();
}

void KafkaSource::priority_on_assign(const std::vector<PartState*>& added) {
  const int64_t now = now_ms();
  // Inside the rebalance: a slow broker must not hold it for long (5 s for them all).
  const int64_t deadline = now + 5000;
  for (PartState* p : added) {
    p->prio_paused = false;
    p->last_seen_ms = now;
    // Nothing fetched yet: ask the broker once how far each partition goes, so the first
    // polls already know which level leads (a failure leaves it unknown: assumed backlog).
    int64_t lo = -1, hi = -1;
    const int64_t left = deadline - now_ms();
    if (left > 0 &&
        query_watermarks(rk_, p->topic, p->number, lo, hi, static_cast<int>(left)) ==
            RD_KAFKA_RESP_ERR_NO_ERROR) {
      p->lo = lo;
      p->hi = hi;
    }
  }
  planner_->forget();
}

PriorityPlanner::Plan KafkaSource::priority_plan() {
  const int64_t now = now_ms();
  std::vector<bool> backlog(priority_.size(), false);
  for (auto& p : parts_) {
    if (!p.assigned || p.level < 0) continue;
    int64_t lo = -1, hi = -1;
    // Waiting for a not-before time: what it has is not due, it holds no level back.
    const bool not_due = p.not_before_ms > 0;
    if (rd_kafka_get_watermark_offsets(rk_, p.topic.c_str(), p.number, &lo, &hi) ==
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (hi >= 0) p.hi = std::max(p.hi, hi);
      if (lo >= 0) p.lo = lo;
    }
    bool waiting = !p.buffered.empty() && !not_due;
    if (!waiting && !p.held && !not_due) {
      const int64_t pos = p.next >= 0 ? p.next : reset_latest_ ? p.hi : p.lo;
      waiting = p.hi < 0 || pos < 0 || p.hi > pos;
      const bool fetching = !paused_ && !p.prio_paused;
      if (waiting && fetching && now - p.last_seen_ms >= kDrainQuietMs) waiting = false;
    }
    if (waiting) backlog[static_cast<size_t>(p.level)] = true;
  }
  // Fetched and waiting in its queue is backlog too, however long it has waited there
  // (a lower level's records wait there for their share).
  for (size_t l = 0; l < level_q_.size(); ++l)
    if (rd_kafka_queue_length(level_q_[l]) > 0) backlog[l] = true;
  return planner_->plan(backlog);
}

sdk::Status KafkaSource::apply_priority(const PriorityPlanner::Plan& plan) {
  std::vector<PartState*> all;
  for (auto& p : parts_) {
    if (!p.assigned || p.level < 0) continue;
    p.prio_paused = !plan.fetch[static_cast<size_t>(p.level)];
    all.push_back(&p);
  }
  return apply_pauses(all);
}

void KafkaSource::hand_buffered(PriorityPlanner::Plan& plan) {
  ++rotate_;
  // What lower levels are owed first: a batch the leader could fill alone keeps room.
  for (bool limited : {true, false}) {
    for (size_t l = 0; l < priority_.size(); ++l) {
      size_t& allow = plan.allowance[l];
      if ((allow != PriorityPlanner::kUnlimited) != limited) continue;
      std::vector<PartState*> of;
      for (auto& p : parts_)
        if (p.assigned && p.level == static_cast<int>(l) && !p.buffered.empty()) of.push_back(&p);
      for (size_t k = 0; k < of.size(); ++k) {
        PartState* p = of[(k + rotate_) % of.size()];
        while (!p->buffered.empty() && allow > 0 && msgs_.size() < batch_size_) {
          msgs_.push_back(p->buffered.front());
          p->buffered.pop_front();
          if (allow != PriorityPlanner::kUnlimited) --allow;
        }
      }
    }
  }
}

bool KafkaSource::admit(rd_kafka_message_t* m, PartState& p, PriorityPlanner::Plan& plan) {
  p.last_seen_ms = now_ms();
  if (p.level < 0) return true;
  size_t& allow = plan.allowance[static_cast<size_t>(p.level)];
  // Behind its own buffered records it waits its turn: offsets stay in order.
  if (p.buffered.empty() && allow > 0) {
    if (allow != PriorityPlanner::kUnlimited) --allow;
    return true;
  }
  p.buffered.push_back(m);
  return false;
}

void KafkaSource::priority_handed(const PriorityPlanner::Plan& plan) {
  std::vector<size_t> counts(priority_.size(), 0);
  for (auto* m : msgs_) {
    PartState* p = state_of(m);
    if (p != nullptr && p->level >= 0) ++counts[static_cast<size_t>(p->level)];
  }
  planner_->handed(plan, counts);
  if (plan.leader < 0) return;
  for (size_t l = static_cast<size_t>(plan.leader) + 1; l < counts.size(); ++l) {
    if (counts[l] == 0) continue;
    std::string labels = "topic=" + priority_[l];
    host_.counter("kafka_source_priority_share_records_total", static_cast<double>(counts[l]),
                  labels.c_str());
  }
}

void KafkaSource::drop_buffered(PartState& p) {
  for (auto* m : p.buffered) rd_kafka_message_destroy(m);
  p.buffered.clear();
}

void KafkaSource::drop_all_buffered() {
  for (auto& p : parts_) drop_buffered(p);
}

size_t KafkaSource::buffered_total() const {
  size_t n = 0;
  for (const auto& p : parts_) n += p.buffered.size();
  return n;
}

// Per level: whether priority holds it paused (whenever that changes) and how many records
// wait for it (at most once a second, like the lag; cached watermarks, so a paused
// level's may be stale).
void KafkaSource::report_priority() {
  const int64_t now = now_ms();
  const bool backlog_due = now - last_priority_report_ms_ >= 1000;
  if (backlog_due) last_priority_report_ms_ = now;
  reported_paused_.resize(priority_.size(), -1);
  for (size_t l = 0; l < priority_.size(); ++l) {
    bool assigned = false, paused = true;
    int64_t backlog = 0;
    for (const auto& p : parts_) {
      if (!p.assigned || p.level != static_cast<int>(l)) continue;
      assigned = true;
      paused = paused && p.prio_paused;
      const int64_t pos = p.next >= 0 ? p.next : p.lo;
      if (p.hi >= 0 && pos >= 0) backlog += std::max<int64_t>(0, p.hi - pos);
    }
    std::string labels = "topic=" + priority_[l];
    const int state = assigned && paused ? 1 : 0;
    if (state != reported_paused_[l] || backlog_due) {
      reported_paused_[l] = state;
      host_.gauge("kafka_source_priority_paused", state, labels.c_str());
    }
    if (backlog_due)
      host_.gauge("kafka_source_priority_backlog", static_cast<double>(backlog), labels.c_str());
  }
}

}  // namespace exactly::kafka
