// The record path: a batch split into tasks, through each task's transforms, rejects to
// the error policy, the outputs to the sink and the dead-letter sink.
#include "engine/pipeline_instance.hpp"

#include "engine/plugin_call.hpp"
#include "engine/reject_reason.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace exactly::engine {

bool Pipeline::handle_reject(Instance& in, const std::string& stage, const ex_record& r,
                             const std::string& reason) {
  std::string where = origin(r);
  in.round_rejected++;
  std::string scope = "pipeline:" + spec_.name;
  switch (spec_.error_policy) {
    case config::ErrorPolicy::stop:
      if (!in.policy_stop)
        in.policy_stop = fmt::format("record at {} rejected by {}: {} (errors.policy: stop)", where,
                                     stage, reason);
      metrics::global().add("records_rejected_total", {{"pipeline", spec_.name}, {"stage", stage}, {"outcome", "stop"}}, 1);
      return false;
    case config::ErrorPolicy::skip: {
      uint64_t n = ++stats_.skipped;
      if (n <= 10 || n % 1000 == 0)
        log::warn(scope, "skipped record at {} rejected by {}: {} ({} skipped so far)", where, stage,
                  reason, n);
      metrics::global().add("records_rejected_total", {{"pipeline", spec_.name}, {"stage", stage}, {"outcome", "skipped"}}, 1);
      return true;
    }
    case config::ErrorPolicy::dead_letter: {
      std::string names[4] = {"exactly.error", "exactly.stage", "exactly.origin", "exactly.pipeline"};
      std::string values[4] = {reason, stage, where, spec_.name};
      std::vector<ex_header> extra;
      for (int i = 0; i < 4; ++i) extra.push_back({bv(names[i]), bv(values[i])});
      in.dlq_pending.push_back(in.arena.copy(r, extra, /*replacing=*/true));  // copies the strings too
      // Said as skip says it: a dead-letter sink that keeps only values (the file sink)
      // keeps no reason, and the log was then the only place left for it.
      uint64_t n = ++stats_.dead_lettered;
      if (n <= 10 || n % 1000 == 0)
        log::warn(scope, "record at {} rejected by {}: {}; to the dead-letter sink ({} so far)", where,
                  stage, reason, n);
      metrics::global().add("records_rejected_total", {{"pipeline", spec_.name}, {"stage", stage}, {"outcome", "dead_letter"}}, 1);
      return true;
    }
  }
  return false;
}

namespace {
struct EmitCtx {
  const ex_batch* in;
  std::vector<ex_record>* out;
  Task* task;
  const std::string* stage;
  std::string bad_call;  // note_bad_call()
};
const ex_record& at(const ex_batch* b, size_t i) {
  return *reinterpret_cast<const ex_record*>(reinterpret_cast<const char*>(b->records) +
                                             i * b->record_size);
}

// A plugin's bad call in process()/write(): keep()/reject() of an index past the batch,
// or emit() of a null record. The first one is kept (`first`, said in full) and the call
// refused; the SDK's void calls drop that code, so refuse_bad_call() then fails the call instead
// (a record silently lost, or the host crashed, otherwise).
int32_t note_bad_call(std::string& first, std::string what) {
  if (first.empty()) first = std::move(what);
  return EX_ERR_FATAL;
}
int32_t note_bad_index(std::string& first, const char* call, size_t idx, size_t count) {
  return note_bad_call(first, fmt::format("a record index out of the batch ({}({}) on a batch of {} record(s))",
                                          call, idx, count));
}
Outcome refuse_bad_call(const std::string& first) {
  return Outcome::make(EX_ERR_FATAL, first + ": the plugin's bug; the round is not committed");
}
}  // namespace

std::string Pipeline::batch_origin(const ex_batch* b) const {
  std::string first = origin(at(b, 0));
  return b->count > 1 ? fmt::format("{} and {} more", first, b->count - 1) : first;
}

std::string Pipeline::working_on(const ex_batch* b, const char* call) const {
  return b->count > 0 ? fmt::format(" (in {}(), working on {})", call, batch_origin(b)) : std::string();
}

// One task's records through its own transforms, on whichever thread runs the task.
// Rejects are kept (copied) for the pipeline thread, which applies the error policy
// once every task is done.
void Pipeline::run_task(Task& task, const ex_batch* batch) {
  task.rejects.clear();
  task.failure = Outcome{};
  const ex_batch* cur = batch;
  for (size_t i = 0; i < task.transforms.size(); ++i) {
    auto& t = task.transforms[i];
    auto& out = task.bufs[i % 2];
    out.clear();
    out.reserve(cur->count);
    const std::string stage = t->id();
    EmitCtx ctx{cur, &out, &task, &stage, {}};
    ex_emitter em{sizeof(ex_emitter), reinterpret_cast<ex_emitter_ctx>(&ctx),
                  [](ex_emitter_ctx c, size_t idx) -> int32_t {
                    auto* x = reinterpret_cast<EmitCtx*>(c);
                    if (idx >= x->in->count) return note_bad_index(x->bad_call, "keep", idx, x->in->count);
                    x->out->push_back(at(x->in, idx));
                    return EX_OK;
                  },
                  [](ex_emitter_ctx c, const ex_record* r) -> int32_t {
                    auto* x = reinterpret_cast<EmitCtx*>(c);
                    // Dereferenced, it crashed the host and the report blamed the host (QA).
                    if (r == nullptr) return note_bad_call(x->bad_call, "emit() was given a null record");
                    x->out->push_back(x->task->arena.copy(*r));
                    return EX_OK;
                  },
                  [](ex_emitter_ctx c, size_t idx, const char* m, size_t n) -> int32_t {
                    auto* x = reinterpret_cast<EmitCtx*>(c);
                    if (idx >= x->in->count) return note_bad_index(x->bad_call, "reject", idx, x->in->count);
                    x->task->rejects.push_back(
                        TaskReject{*x->stage, x->task->arena.copy(at(x->in, idx)), reject_reason(m, n)});
                    return EX_OK;
                  }};
    if (cur->count > 0) set_next_call_origin(batch_origin(cur));
    Outcome o = t->process(cur, &em);
    if (o.ok() && !ctx.bad_call.empty()) o = refuse_bad_call(ctx.bad_call);
    if (!o.ok()) {
      // An error on a config key names its place in the file, as create()'s does. The
      // batch is named too: an error of a whole call says no record of its own.
      o.message = o.key.empty() ? fmt::format("{}: {}{}", stage, o.message, working_on(cur, "process"))
                                : t->describe_call_error("process", o);
      task.failure = o;
      return;
    }
    // errors.policy stop: nothing after a rejected record's stage runs.
    if (!task.rejects.empty() && spec_.error_policy == config::ErrorPolicy::stop) return;
    task.views[i % 2] = ex_batch{sizeof(ex_batch), sizeof(ex_record), out.data(), out.size()};
    cur = &task.views[i % 2];
  }
  task.out = cur;
}

void Pipeline::publish_task_stats(const TaskPool::Stats& before, const TaskPool::Stats& after) {
  if (after.fanned_out != before.fanned_out)
    metrics::global().add("task_batches_fanned_out_total", labels(), 1);
  else
    metrics::global().add("task_batches_on_caller_total", labels(), 1);
  if (after.last_speedup != before.last_speedup)
    metrics::global().set("task_speedup", labels(), after.last_speedup);
}

Outcome Pipeline::process_batch(Instance& in, const ex_batch* batch) {
  auto t0 = Clock::now();
  in.arena.reset();
  in.dlq_pending.clear();
  // Records of one partition come in runs: one map lookup per run, not per record.
  int64_t* pos = nullptr;
  PartitionInfo* info = nullptr;
  int32_t pos_of = 0;
  int64_t oldest_ms = std::numeric_limits<int64_t>::max();
  int64_t newest_ms = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < batch->count; ++i) {
    const ex_record& r = at(batch, i);
    if (r.timestamp_ms >= 0) {
      oldest_ms = std::min(oldest_ms, r.timestamp_ms);
      newest_ms = std::max(newest_ms, r.timestamp_ms);
    }
    if (pos == nullptr || r.partition != pos_of) {
      pos_of = r.partition;
      // The contract (assigned() before a partition's first record) broken by the source
      // is the source's bug, said as such: a stateful stage would otherwise refuse the
      // record and be blamed, and a stateless pipeline commit a partition nobody owns.
      auto it = partitions_.find(pos_of);
      if (it == partitions_.end())
        return Outcome::make(EX_ERR_FATAL,
                             fmt::format("{}: returned a record of partition id {} (offset {}) that it "
                                         "has not reported with assigned() (or has revoked)",
                                         in.source->id(), pos_of, r.offset));
      info = &it->second;
      pos = &in.round_positions.try_emplace(pos_of, -1).first->second;
    }
    // Offsets rise within a partition (positions are offset + 1). The same record handed
    // twice would pass a dedupe stage as a replay of its own claim, both copies kept (QA).
    if (r.offset <= info->last_offset)
      return Outcome::make(EX_ERR_FATAL,
                           fmt::format("{}: returned record {} of a batch of {} from partition {} at offset {} "
                                       "after offset {}: a source's offsets must rise within a partition "
                                       "(until a rewind or a new assignment); the source's bug",
                                       in.source->id(), i, batch->count, info->name, r.offset, info->last_offset));
    info->last_offset = r.offset;
    // A record's position is its offset + 1: the largest int64 has none.
    if (r.offset == std::numeric_limits<int64_t>::max())
      return Outcome::make(EX_ERR_FATAL, fmt::format("{}: record {} of a batch of {} (partition {}) has "
                                                     "offset {}, which has no next position; offsets "
                                                     "must be below it",
                                                     in.source->id(), i, batch->count, r.partition, r.offset));
    *pos = std::max(*pos, r.offset + 1);
  }
  metrics::global().add("records_in_total", labels(), static_cast<double>(batch->count));
  if (oldest_ms != std::numeric_limits<int64_t>::max()) {
    metrics::global().observe("record_age_at_poll_seconds", labels(), age_seconds(oldest_ms));
    in.round_oldest_ms = std::min(in.round_oldest_ms, oldest_ms);
    in.batch_newest_ms = newest_ms;
  }

  // The tasks: each its share of the batch (partition id % tasks, batch order kept).
  const size_t n = in.tasks.size();
  // Every task's, not only those run_task resets: a task with no records in this batch
  // kept the previous batch's rejects (copies in the arena just reset), and they were
  // handled again (QA: threads 2 dead-lettered each rejected record 2-4 times).
  for (auto& task : in.tasks) {
    task.arena.reset();
    task.out = nullptr;
    task.rejects.clear();
    task.failure = Outcome{};
  }
  if (n == 1) {
    run_task(in.tasks[0], batch);
  } else {
    for (auto& task : in.tasks) task.in.clear();
    for (size_t i = 0; i < batch->count; ++i) {
      const ex_record& r = at(batch, i);
      in.tasks[in.task_of(r.partition)].in.push_back(r);
    }
    const TaskPool::Stats before = in.pool->stats();
    in.pool->run(n, [&](size_t k) {
      Task& task = in.tasks[k];
      if (task.in.empty()) return;
      task.in_view = ex_batch{sizeof(ex_batch), sizeof(ex_record), task.in.data(), task.in.size()};
      run_task(task, &task.in_view);
    });
    publish_task_stats(before, in.pool->stats());
  }
  for (auto& task : in.tasks)
    for (const auto& rj : task.rejects) handle_reject(in, rj.stage, rj.record, rj.reason);
  for (auto& task : in.tasks)
    if (!task.failure.ok()) return task.failure;
  if (in.policy_stop) return Outcome::make(EX_ERR_CONFIG, *in.policy_stop);
  const ex_batch* cur = in.tasks[0].out;
  ex_batch merged_view{};
  if (n > 1) {
    in.merged.clear();
    for (auto& task : in.tasks)
      if (task.out != nullptr)
        for (size_t i = 0; i < task.out->count; ++i) in.merged.push_back(at(task.out, i));
    merged_view = ex_batch{sizeof(ex_batch), sizeof(ex_record), in.merged.data(), in.merged.size()};
    cur = &merged_view;
  }
  if (cur == nullptr) cur = batch;  // no transforms ran (n == 1 and an empty chain)

  size_t sink_rejects = 0;
  struct SinkCtx {
    Pipeline* p;
    Instance* in;
    const ex_batch* batch;
    std::string stage;
    size_t* count;
    std::string bad_call;  // note_bad_call()
  } sctx{this, &in, cur, in.sink->id(), &sink_rejects, {}};
  ex_record_errors errs{sizeof(ex_record_errors), reinterpret_cast<ex_record_errors_ctx>(&sctx),
                        [](ex_record_errors_ctx c, size_t idx, const char* m, size_t n) -> int32_t {
                          auto* x = reinterpret_cast<SinkCtx*>(c);
                          if (idx >= x->batch->count)
                            return note_bad_index(x->bad_call, "reject", idx, x->batch->count);
                          ++*x->count;
                          x->p->handle_reject(*x->in, x->stage, at(x->batch, idx), reject_reason(m, n));
                          return EX_OK;
                        },
                        nullptr};  // reject_record: only from completed() (pipeline_window.cpp)
  if (cur->count > 0) {
    set_next_call_origin(batch_origin(cur));
    Outcome o = in.sink->write(cur, &errs);
    // A record the sink says it refused but cannot be named was neither written nor sent
    // to the error policy: the round must not commit past it.
    if (o.ok() && !sctx.bad_call.empty()) o = refuse_bad_call(sctx.bad_call);
    if (!o.ok()) {
      o.message = o.key.empty() ? fmt::format("{}: {}{}", in.sink->id(), o.message, working_on(cur, "write"))
                                : in.sink->describe_call_error("write", o);
      return o;
    }
  }
  if (in.policy_stop) return Outcome::make(EX_ERR_CONFIG, *in.policy_stop);
  Outcome d = write_dead_letters(in);
  if (!d.ok()) return d;
  uint64_t out = cur->count - sink_rejects;
  in.round_out += out;
  metrics::global().add("records_out_total", labels(), static_cast<double>(out));
  metrics::global().observe("batch_latency_seconds", labels(), seconds_since(t0));
  return {};
}

Outcome Pipeline::write_dead_letters(Instance& in) {
  if (!in.dlq_pending.empty()) {
    ex_batch d{sizeof(ex_batch), sizeof(ex_record), in.dlq_pending.data(), in.dlq_pending.size()};
    // The first refused record is named in the stop message: the operator has to find it.
    struct DlqCtx {
      size_t n = 0;
      size_t first = 0;
      std::string why;
    } dctx;
    ex_record_errors derrs{sizeof(ex_record_errors), reinterpret_cast<ex_record_errors_ctx>(&dctx),
                           [](ex_record_errors_ctx c, size_t i, const char* why, size_t len) -> int32_t {
                             auto* x = reinterpret_cast<DlqCtx*>(c);
                             if (x->n++ == 0) {
                               x->first = i;
                               x->why = reject_reason(why, len);
                             }
                             return EX_OK;
                           },
                           nullptr};
    Outcome o = in.dlq->write(&d, &derrs);
    if (!o.ok()) return in.dlq->call_failure("write", o);
    // A record the dead-letter sink refuses has nowhere left to go: stop, never drop.
    if (dctx.n > 0) {
      const std::string first =
          dctx.first < in.dlq_pending.size() ? origin(in.dlq_pending[dctx.first]) : std::string("?");
      return Outcome::make(EX_ERR_CONFIG,
                           fmt::format("the dead-letter sink rejected {} record(s), the first {}: {}; "
                                       "stopping rather than losing them",
                                       dctx.n, first, dctx.why.empty() ? "(no reason given)" : dctx.why));
    }
  }
  in.dlq_pending.clear();  // written: a later call must not write them again
  return {};
}

}  // namespace exactly::engine
