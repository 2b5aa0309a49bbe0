// The commit protocol: a round made durable by every stage, committed by the sink with
// the source's positions, or aborted and rewound.
#include "engine/pipeline_instance.hpp"

#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace exactly::engine {


Outcome Pipeline::commit_round(Instance& in, bool final) {
  auto t0 = Clock::now();
  ex_checkpoint cp{};
  Outcome o = in.source->checkpoint(&cp);
  if (!o.ok()) return in.source->call_failure("checkpoint", o);
  std::string fmt_s = sv(cp.format), data_s = sv(cp.data);
  // Records an earlier round wrote and the sink was still delivering: this commit moves
  // them too (for the summary's active span, which ended at the read before: QA saw an
  // http pipeline's "rate" at 35,029 r/s while its server took 20 a second).
  const bool in_flight_before = in.sink->has_completed() && !in.window.empty();
  if (in.sink->has_completed()) {
    o = settle_window(in, final, fmt_s, data_s);
    if (!o.ok()) return o;
  }
  ex_checkpoint positions{sizeof(ex_checkpoint), bv(fmt_s), bv(data_s)};

  // 1. every stateful stage makes the round durable, knowing how far the round read
  if (!in.round_positions.empty()) {
    std::vector<ex_partition> read;
    for (auto [id, pos] : in.round_positions) {
      auto it = partitions_.find(id);
      if (it == partitions_.end()) continue;
      read.push_back(ex_partition{sizeof(ex_partition), id, bv(it->second.name),
                                  bv(it->second.topic), it->second.number, pos});
    }
    auto shares = in.split(read);
    for (size_t k = 0; k < in.tasks.size(); ++k) {
      if (shares[k].empty()) continue;
      for (auto& t : in.tasks[k].transforms) {
        o = t->positions(shares[k]);
        if (!o.ok()) return t->call_failure("positions", o);
      }
    }
  }
  // Serially, on this thread: a stage's changelog records go into the sink's round.
  for (auto& task : in.tasks)
    for (auto& t : task.transforms) {
      o = t->prepare_commit();
      if (!o.ok()) return t->call_failure("prepare_commit", o);
    }
  o = in.sink->prepare_commit();
  if (!o.ok()) return in.sink->call_failure("prepare_commit", o);
  // Dead letters are flushed before the main commit: never lost, at worst repeated.
  if (in.dlq) {
    uint32_t f = 0;
    o = in.dlq->prepare_commit();
    if (!o.ok()) return in.dlq->call_failure("prepare_commit", o);
    o = in.dlq->commit(nullptr, &f);
    if (!o.ok()) return in.dlq->call_failure("commit", o);
  }
  const auto t_prepared = Clock::now();
  // 2. the sink commits output and, when it can, the positions with it
  uint32_t flags = 0;
  o = in.sink->commit(&positions, &flags);
  if (!o.ok()) return in.sink->call_failure("commit", o);
  if ((flags & EX_SINK_STORED_POSITIONS) != 0 && (flags & EX_SINK_POSITIONS_IN_SOURCE) == 0) {
    // The sink keeps the positions with its output; the source's own store follows, so
    // that whoever resumes a partition from it (another host of the group, or this one
    // after a rebalance) does not start over. Best effort: the sink's copy is the truth.
    o = in.source->commit(&positions);
    if (!o.ok())
      log::warn("pipeline:" + spec_.name, "{} could not mirror the positions the sink stored ({})",
                in.source->id(), o.message);
  } else if ((flags & EX_SINK_STORED_POSITIONS) == 0) {
    if (spec_.delivery == config::Delivery::exactly_once)
      return Outcome::make(
          EX_ERR_CONFIG,
          fmt::format("{}: delivery is exactly_once but sink '{}' cannot store the source's "
                      "positions ({}) atomically with its output; use delivery: at_least_once "
                      "or a sink/source pair that supports it",
                      spec_.mark.str(), spec_.sink.plugin, fmt_s.empty() ? "none" : fmt_s));
    o = in.source->commit(&positions);
    if (!o.ok())
      log::warn("pipeline:" + spec_.name,
                "{} could not commit its positions ({}); they are committed with the next round",
                in.source->id(), o.message);
  }
  const auto t_sink = Clock::now();
  for (auto& task : in.tasks)
    for (auto& t : task.transforms) {
      Outcome c = t->commit();
      if (c.ok()) continue;
      // The round is committed; a stage that could not follow must be rebuilt (a store
      // with a changelog restores what it missed).
      log::error("pipeline:" + spec_.name, "{} commit: {}", t->id(), c.message);
      if (!in.callback_failure)
        in.callback_failure = Outcome{EX_ERR_FATAL, t->id() + " commit: " + c.message, {}};
    }
  in.round_positions.clear();
  in.has_last = true;
  in.last_format = fmt_s;
  in.last_data = data_s;
  stats_.records_in += in.round_records;
  if (in.round_records > 0 || in_flight_before) stats_.last_commit_us = micros_since(started_);
  // A record that failed late was counted out in the round that wrote it: the summary
  // said "out 100, rejected 102" of 102 records none of which got through.
  const uint64_t out_before = stats_.records_out.load();
  stats_.records_out = out_before + in.round_out - std::min(out_before + in.round_out, in.round_late_rejected);
  stats_.rejected += in.round_rejected;
  in.round_records = in.round_out = in.round_rejected = in.round_late_rejected = 0;
  if (in.round_oldest_ms != std::numeric_limits<int64_t>::max())
    metrics::global().observe("record_age_at_commit_seconds", labels(), age_seconds(in.round_oldest_ms));
  in.round_oldest_ms = std::numeric_limits<int64_t>::max();
  in.consecutive_aborts = 0;
  if (stats_.aborts_in_a_row.exchange(0) != 0) metrics::global().set("pipeline_aborts_in_a_row", labels(), 0);
  stats_.commits++;
  metrics::global().add("commits_total", labels(), 1);
  const auto t_end = Clock::now();
  metrics::global().observe("commit_latency_seconds", labels(), std::chrono::duration<double>(t_end - t0).count());
  // Where a slow commit went (the phases are named in the metric's description).
  auto phase = [&](const char* name, Clock::time_point a, Clock::time_point b) {
    auto l = labels();
    l.emplace_back("phase", name);
    metrics::global().observe("commit_phase_seconds", l, std::chrono::duration<double>(b - a).count());
  };
  phase("prepare", t0, t_prepared);
  phase("sink", t_prepared, t_sink);
  phase("apply", t_sink, t_end);
  return {};
}

void Pipeline::forget_last_offsets() {
  for (auto& [id, p] : partitions_) p.last_offset = kNoOffsetYet;
}

void Pipeline::abort_round(Instance& in, const std::string& why) {
  std::string scope = "pipeline:" + spec_.name;
  log::warn(scope, "aborting round of {} records: {}", in.round_records, why);
  if (in.sink) in.sink->abort();
  if (in.dlq) in.dlq->abort();
  for (auto& task : in.tasks)
    for (auto& t : task.transforms) t->abort();
  if (in.source) {
    forget_last_offsets();  // the source reads again from the last commit
    ex_checkpoint last = in.last();
    Outcome o = in.source->rewind(&last);
    if (!o.ok()) {
      in.callback_failure = Outcome{EX_ERR_FATAL, in.source->call_failure("rewind", o).message, {}};
    }
  }
  stats_.replayed += in.round_records;
  in.round_records = in.round_out = in.round_rejected = in.round_late_rejected = 0;
  in.round_oldest_ms = std::numeric_limits<int64_t>::max();
  in.round_positions.clear();
  in.dlq_pending.clear();
  in.window.clear();  // the sink dropped what was in flight; the source replays it
  in.window_open.clear();
  in.consecutive_aborts++;
  metrics::global().set("pipeline_aborts_in_a_row", labels(), static_cast<double>(++stats_.aborts_in_a_row));
  stats_.aborts++;
  metrics::global().add("aborts_total", labels(), 1);
}

}  // namespace exactly::engine
