// The kafka source's not-before waits (`not.before.header`): a record whose header says
// "not before T" (epoch milliseconds, e.g. the http sink's retry topic) is not handed out
// before T. Its partition waits instead: paused in librdkafka and positioned at that
// record (`next`, so checkpoints and a revocation report it as the next to read), its
// later records of the same poll dropped (they come again after it). Other partitions
// keep flowing. When T has come, the pause is lifted and resume_checked() seeks back to
// the record, so nothing is skipped and a partition's order is kept.
//
// The wait composes with the other pauses through wants_pause(): a partition resumes
// only when nothing (whole-source pause, a hold, its priority level, a wait) wants it
// paused. A hold, a rewind to another offset or a revocation ends the wait: the
// partition then restarts elsewhere and meets the record (and its time) again.
#include "kafka_source.hpp"
#include "message_headers.hpp"

#include <chrono>

namespace exactly::kafka {

namespace {

// The header's value as epoch milliseconds; false when absent. `bad` when present but not
// a plain decimal number.
bool not_before_of(const rd_kafka_message_t* m, const std::string& name, int64_t& out, bool& bad) {
  rd_kafka_headers_t* h = headers_of(m);
  if (h == nullptr) return false;
  const void* v = nullptr;
  size_t size = 0;
  // The last one counts: a record re-enqueued again carries the newest time last.
  if (rd_kafka_header_get_last(h, name.c_str(), &v, &size) != RD_KAFKA_RESP_ERR_NO_ERROR) return false;
  const char* p = static_cast<const char*>(v);
  int64_t t = 0;
  bad = v == nullptr || size == 0 || size > 18;
  for (size_t i = 0; !bad && i < size; ++i) {
    if (p[i] < '0' || p[i] > '9') bad = true;
    else t = t * 10 + (p[i] - '0');
  }
  if (bad) return false;
  out = t;
  return true;
}

}  // namespace

sdk::Status KafkaSource::release_not_before() {
  const int64_t now = wall_ms();
  std::vector<PartState*> due;
  for (auto& p : parts_)
    if (p.assigned && p.not_before_ms > 0 && p.not_before_ms <= now) {
      p.not_before_ms = 0;
      due.push_back(&p);
    }
  report_not_before();
  if (due.empty()) return sdk::Status::ok();
  return apply_pauses(due);
}

sdk::Status KafkaSource::hold_not_before() {
  const int64_t now = wall_ms();
  std::vector<PartState*> waiting;
  auto keep = msgs_.begin();
  for (auto it = msgs_.begin(); it != msgs_.end(); ++it) {
    rd_kafka_message_t* m = *it;
    PartState* p = state_of(m);
    bool hold = p != nullptr && p->not_before_ms > 0;
    if (!hold && p != nullptr) {
      int64_t t = 0;
      bool bad = false;
      if (not_before_of(m, not_before_header_, t, bad) && t > now) {
        hold = true;
        p->not_before_ms = t;
        // Everything before it was handed out: it is the next to read.
        p->next = m->offset;
        if (p->start < 0) p->start = m->offset;
        drop_buffered(*p);  // after it: read again once it is due
        waiting.push_back(p);
        host_.counter("kafka_source_not_before_waits_total", 1);
      } else if (bad && !warned_bad_not_before_) {
        warned_bad_not_before_ = true;
        host_.warn("kafka source: header " + not_before_header_ + " of a record of " + p->name +
                   " is not epoch milliseconds; such records are handed out at once");
      }
    }
    if (hold) rd_kafka_message_destroy(m);
    else *keep++ = m;
  }
  msgs_.erase(keep, msgs_.end());
  report_not_before();
  if (waiting.empty()) return sdk::Status::ok();
  return apply_pauses(waiting);
}

// The gauge whenever it changes, and once a second.
void KafkaSource::report_not_before() {
  int n = 0;
  for (const auto& p : parts_)
    if (p.assigned && p.not_before_ms > 0) ++n;
  const int64_t now = now_ms();
  if (n == reported_waiting_ && now - last_not_before_report_ms_ < 1000) return;
  reported_waiting_ = n;
  last_not_before_report_ms_ = now;
  host_.gauge("kafka_source_not_before_waiting_partitions", n);
}

}  // namespace exactly::kafka
