// The kafka source's fetch stall check (`fetch.stall.timeout`). A partition that librdkafka
// should be fetching (assigned, not paused for any reason) but from which no record has
// arrived for that long, while the broker holds records past its position, is stalled:
// in a latency benchmark (docs/benchmarks.md) librdkafka 2.0.2 once never fetched one
// partition of a freshly created topic, with no error and no log line, and the pipeline
// went on with the other three. Nothing else notices: the lag gauge needs a position, and
// a partition that never delivered a record has none.
//
// The remedy is what restarting the host would do, for that partition only: refresh the
// topic's metadata (a partition without a known leader is not fetched) and seek it to its
// position, which restarts librdkafka's fetch state for it. "Records waiting" counts what
// a read_committed source may read (librdkafka's watermarks are then the last stable
// offset): records behind an open transaction are not a stall.
#include "kafka_source.hpp"

#include <algorithm>
#include <memory>
#include <string>

namespace exactly::kafka {

int64_t KafkaSource::resume_point(const PartState& p) const {
  if (p.next >= 0) return p.next;
  if (p.start >= 0) return p.start;
  // Nothing read and nothing committed: auto.offset.reset decides. At the latest end the
  // position is wherever the end was when fetching began, which is not known here.
  return reset_latest_ ? RD_KAFKA_OFFSET_INVALID : reset_offset();
}

void KafkaSource::check_stalls() {
  if (stall_timeout_ms_ <= 0) return;
  const int64_t now = now_ms();
  if (now - last_stall_check_ms_ < 1000) return;
  last_stall_check_ms_ = now;
  // At most one broker request per check: with the broker unreachable each waits its 2 s,
  // and a poll must not wait that for every quiet partition in turn.
  bool asked = false;
  for (auto& p : parts_) {
    if (!p.assigned) continue;
    // Paused (for any reason) or holding records back for a priority level: not fetching
    // by design, so the clock starts again once it fetches.
    if (p.rd_paused || wants_pause(p, paused_) || !p.buffered.empty()) {
      p.progress_ms = now;
      p.unanswered_since_ms = 0;
      continue;
    }
    if (now - p.progress_ms < stall_timeout_ms_) continue;
    const int64_t at = resume_point(p);
    if (at == RD_KAFKA_OFFSET_INVALID) {
      p.progress_ms = now;
      continue;
    }
    int64_t lo = -1, hi = -1;
    // The cached watermarks first (no request): a partition that is caught up has them
    // from its last (empty) fetch answer.
    if (rd_kafka_get_watermark_offsets(rk_, p.topic.c_str(), p.number, &lo, &hi) ==
            RD_KAFKA_RESP_ERR_NO_ERROR &&
        hi >= 0 && at >= 0 && hi <= at) {
      p.progress_ms = now;
      p.unanswered_since_ms = 0;
      continue;
    }
    if (asked) continue;  // its turn comes at the next check
    asked = true;
    // None cached (never fetched) or records past the position: ask the broker.
    const int64_t heard_ms = p.unanswered_since_ms > 0 ? p.unanswered_since_ms : p.progress_ms;
    p.progress_ms = now;  // asked about at most once per timeout
    if (const rd_kafka_resp_err_t err = query_watermarks(rk_, p.topic, p.number, lo, hi, 2000);
        err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      // Not restarted (nothing says records wait), but not silent either: a leader that
      // cannot be reached, or refuses this client's credentials, leaves the partition
      // unread for as long as that lasts (QA: minutes, with a revoked password).
      p.unanswered_since_ms = heard_ms;
      warn_unanswered(p, now, err);
      continue;  // asked again after another timeout
    }
    p.unanswered_since_ms = 0;
    const int64_t from = at >= 0 ? at : lo;
    if (hi <= from) continue;  // nothing waiting: a quiet partition
    restart_fetch(p, at, hi - from);
  }
}

void KafkaSource::warn_unanswered(PartState& p, int64_t now, rd_kafka_resp_err_t err) {
  std::string text = "kafka source: " + p.name + " has not been read for " +
                     std::to_string((now - p.unanswered_since_ms) / 1000) +
                     " s and its leader did not answer for its end offset (" + rd_kafka_err2str(err) +
                     "): it is not being read while that lasts (librdkafka retries by itself";
  // librdkafka reports a repeated error once and then suppresses it, so the latest one may
  // be older than a timeout and still be the cause.
  const std::string last = recent_error(now, std::max<int64_t>(3 * stall_timeout_ms_, 120000));
  if (!last.empty())
    text += "; the client's latest error, " + std::to_string((now - recent_error_ms()) / 1000) +
            " s ago: " + last;
  text += "); asked again every " + std::to_string(stall_timeout_ms_ / 1000) + " s";
  host_.warn(text);
  std::string labels = "partition=" + p.name;
  host_.counter("kafka_source_fetch_stalls_unanswered_total", 1, labels.c_str());
}

void KafkaSource::restart_fetch(PartState& p, int64_t at, int64_t waiting) {
  host_.warn("kafka source: no record of " + p.name + " arrived for " +
             std::to_string(stall_timeout_ms_ / 1000) + " s although " + std::to_string(waiting) +
             " are waiting at the broker; restarting its fetch at " +
             (at >= 0 ? "offset " + std::to_string(at) : std::string("the earliest offset")));
  std::string labels = "partition=" + p.name;
  host_.counter("kafka_source_fetch_restarts_total", 1, labels.c_str());
  // A partition whose leader librdkafka lost track of is not fetched from anywhere; a
  // metadata answer for the topic updates its leaders.
  refresh_metadata(rk_, p.topic, 2000);
  // A partition this source fetches but librdkafka still holds paused (see seek_all)
  // moves again only once resumed; resuming one that is not paused does nothing.
  if (!wants_pause(p, paused_)) {
    TplPtr one(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(one.get(), p.topic.c_str(), p.number);
    rd_kafka_resume_partitions(rk_, one.get());
    p.rd_paused = false;
  }
  sdk::Status st = seek_all({{&p, at}});
  if (!st) host_.warn(st.message());
}

}  // namespace exactly::kafka
