// A sink's ordered completion window (ABI 1.4): records it still has in flight after
// write() returned hold each partition's committed position at its lowest incomplete
// record, so a crash replays only unfinished work; records that failed after write()
// returned reach the error policy in the round that moves the position past them.
#include "engine/pipeline_instance.hpp"
#include "engine/reject_reason.hpp"
#include "engine/stage_watchdog.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <functional>
#include <thread>

namespace exactly::engine {

namespace {
struct LateCtx {
  std::function<void(const ex_record&, std::string)> reject;
};
}  // namespace

Outcome Pipeline::settle_window(Instance& in, bool final, std::string& format, std::string& data) {
  for (auto [id, pos] : in.round_positions) in.window[id] = pos;
  if (in.window.empty()) {
    // Nothing written since an abort or a revocation cleared it: nothing is behind.
    metrics::global().set("sink_window_partitions_behind", labels(), 0.0);
    return {};
  }
  // Without checkpoint_at the host cannot commit a lowered position, and a round ended
  // for good must leave nothing in flight: then the sink is asked until it is done.
  const bool drain = final || !in.source->has_checkpoint_at();
  const std::string stage = in.sink->id();
  LateCtx ctx{[&](const ex_record& r, std::string why) {
    ++in.round_late_rejected;
    handle_reject(in, stage, r, why);
  }};
  ex_record_errors errs{sizeof(ex_record_errors), reinterpret_cast<ex_record_errors_ctx>(&ctx),
                        [](ex_record_errors_ctx, size_t, const char*, size_t) -> int32_t {
                          return EX_ERR_FATAL;
                        },
                        [](ex_record_errors_ctx c, const ex_record* r, const char* m,
                           size_t n) -> int32_t {
                          if (r == nullptr) return EX_ERR_FATAL;
                          reinterpret_cast<LateCtx*>(c)->reject(*r, reject_reason(m, n));
                          return EX_OK;
                        }};
  std::vector<ex_partition> parts;
  for (;;) {
    parts.clear();
    for (auto [id, pos] : in.window) {
      auto it = partitions_.find(id);
      if (it == partitions_.end())
        parts.push_back(ex_partition{sizeof(ex_partition), id, {}, {}, id, pos});
      else
        parts.push_back(ex_partition{sizeof(ex_partition), id, bv(it->second.name),
                                     bv(it->second.topic), it->second.number, pos});
    }
    Outcome o = in.sink->completed(parts, &errs);
    if (!o.ok()) return Outcome{o.code, stage + " completed: " + o.message, o.key};
    watch_open_records(in, parts, drain);
    if (in.policy_stop) return Outcome::make(EX_ERR_CONFIG, *in.policy_stop);
    o = write_dead_letters(in);
    if (!o.ok()) return o;
    bool behind = false;
    for (const auto& x : parts) behind = behind || x.start_offset < in.window[x.id];
    if (!behind || !drain) break;
    // A stop (signal, reload) does not wait for a slow downstream, not even at the end
    // of a bounded input: the lowered positions are committed, and what is still in
    // flight is sent again by the next start. It waited for every request before (a
    // stop then ran into shutdown.timeout and exited 3 committing nothing).
    if (stop_) {
      if (in.source->has_checkpoint_at()) break;
      return Outcome::make(EX_ERR_ABORTABLE,
                           stage + " still has records in flight and the source cannot commit "
                                   "below them: the round is replayed on the next start");
    }
    // Only the end of an input waits without bound; a drain of every round (a source
    // without checkpoint_at) ends with its requests, and an edit then applies in place.
    if (final) decline_reconfigure("the sink finishes the last records of its input");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<ex_partition> lowered;
  for (const auto& x : parts) {
    if (x.start_offset < in.window[x.id])
      lowered.push_back(x);
    else
      in.window.erase(x.id);  // nothing of it in flight: the scan position is complete
  }
  metrics::global().set("sink_window_partitions_behind", labels(), static_cast<double>(lowered.size()));
  if (lowered.empty()) return {};
  ex_checkpoint low{};
  Outcome o = in.source->checkpoint_at(lowered, &low);
  if (!o.ok()) return in.source->call_failure("checkpoint_at", o);
  format = sv(low.format);
  data = sv(low.data);
  return {};
}

void Pipeline::watch_open_records(Instance& in, const std::vector<ex_partition>& parts, bool draining) {
  // A partition's lowest open record that stays the same for stage.timeout is said, and
  // again every stage.timeout while it stays.
  const auto warn_after = std::chrono::milliseconds(StageWatchdog::configured_timeout_ms());
  if (warn_after.count() <= 0) return;
  const auto now = Clock::now();
  for (const auto& x : parts) {
    if (x.start_offset >= in.window[x.id]) {
      in.window_open.erase(x.id);
      continue;
    }
    auto& open = in.window_open[x.id];
    if (open.offset != x.start_offset || open.since == Clock::time_point{}) open = {x.start_offset, now, now};
    if (now - open.since < warn_after || now - open.said < warn_after) continue;
    open.said = now;
    auto it = partitions_.find(x.id);
    log::warn("pipeline:" + spec_.name,
              "{} has had the record at offset {} of {} in flight for {} s{}; the sink has not "
              "completed it (exactly_sink_window_partitions_behind counts such partitions)",
              in.sink->id(), x.start_offset, it != partitions_.end() ? it->second.name : std::to_string(x.id),
              std::chrono::duration_cast<std::chrono::seconds>(now - open.since).count(),
              draining ? ": the pipeline waits for it before it commits (the end of its input, or a "
                         "source that cannot commit below it); a stop ends the wait and the next start "
                         "sends it again"
                       : ", and its committed position stays there");
  }
}

}  // namespace exactly::engine
