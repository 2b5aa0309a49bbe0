// The pipeline's life: its thread, one instance built, run round after round and torn
// down, rebuilt with backoff after a failure.
#include "engine/pipeline_instance.hpp"

#include "engine/fatal_signal.hpp"
#include "engine/round_cadence.hpp"
#include "engine/stage_cpu.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>
#include <utility>

namespace exactly::engine {
namespace {
// The longest a poll waits: also how long the source must have had nothing for the round
// to commit early (commit.when.idle).
constexpr int32_t kIdlePollMs = 100;
}  // namespace

const char* to_string(State s) {
  switch (s) {
    case State::starting: return "starting";
    case State::running: return "running";
    case State::finished: return "finished";
    case State::stopped: return "stopped";
    default: return "failed";
  }
}

Pipeline::Pipeline(config::PipelineSpec spec) : spec_(std::move(spec)) {
  auto& m = metrics::global();
  m.describe("records_in_total", metrics::Type::counter, "Records read from the source");
  m.describe("records_out_total", metrics::Type::counter, "Records handed to the sink");
  m.describe("records_rejected_total", metrics::Type::counter,
             "Records rejected by a stage, by stage and error policy outcome");
  m.describe("commits_total", metrics::Type::counter, "Rounds committed");
  m.describe("aborts_total", metrics::Type::counter, "Rounds aborted and rewound");
  m.describe("restarts_total", metrics::Type::counter, "Pipeline instances rebuilt after a fatal error");
  m.describe("commit_latency_seconds", metrics::Type::histogram, "Time to commit a round");
  m.describe("commit_phase_seconds", metrics::Type::histogram,
             "Time of each phase of a round's commit: prepare (checkpoint, completion window, "
             "stages' and sink's prepare, dead letters), sink (the sink's commit and the "
             "source's offset mirror), apply (the stages' commit)");
  m.describe("batch_latency_seconds", metrics::Type::histogram,
             "Time to run one batch through transforms and sink");
  m.describe("record_age_at_poll_seconds", metrics::Type::histogram,
             "Per batch, the age of its oldest record (now less the record's timestamp) as the "
             "source hands it over: how long input waited before the pipeline saw it");
  m.describe("record_age_at_commit_seconds", metrics::Type::histogram,
             "Per committed round, the age of its oldest record when the commit returns: the "
             "round's worst end-to-end latency up to its output being committed (a reader "
             "still has to fetch it)");
  m.describe("stage_cpu_seconds_total", metrics::Type::counter,
             "CPU time of each stage's calls (the calling thread's CPU clock: waits do not "
             "count), by call; stage host, call pipeline_thread: the pipeline thread's own work "
             "outside plugin calls. A plugin's own threads (librdkafka's, a store's "
             "background work) are not in it. Published once a round");
  m.describe("pipeline_up", metrics::Type::gauge, "1 while the pipeline runs");
  m.describe("pipeline_finished", metrics::Type::gauge,
             "1 once a bounded pipeline has read and committed all of its input (it is then "
             "down and done, not failed)");
  m.describe("pipeline_aborts_in_a_row", metrics::Type::gauge,
             "Rounds aborted since the pipeline's last commit (0 once a round commits)");
  // pipeline_up stays 1 while every round aborts (a sink that cannot commit): this is
  // what says so, and /readyz reads it.
  m.set("pipeline_aborts_in_a_row", labels(), 0);
  // A commit held up (waiting out a broker outage) has not failed yet, so the gauge
  // above still says 0: /readyz reads the commit's start against ready.commit.timeout.
  m.describe("pipeline_commit_started_timestamp_seconds", metrics::Type::gauge,
             "Unix time at which the pipeline's running commit began (with the abort after "
             "it, if it failed); 0 while none runs");
  m.describe("pipeline_commit_ready_seconds", metrics::Type::gauge,
             "How long a commit may run with /readyz still ready: ready.commit.timeout (0 = no limit)");
  metrics::global().set("pipeline_commit_ready_seconds", labels(),
                        static_cast<double>(spec_.ready_commit_timeout_ms) / 1000.0);
  // Every counter of the pipeline's own from its start, at 0: a series that appears only
  // at its first increment has no earlier sample, and `increase(...[1h]) > 0` missed each
  // pipeline's first restart and first abort (QA).
  for (const char* counter : {"records_in_total", "records_out_total", "commits_total", "aborts_total",
                              "restarts_total"})
    m.add(counter, labels(), 0);
  m.describe("task_batches_fanned_out_total", metrics::Type::counter,
             "Batches of a pipeline with several tasks whose tasks were offered to the task threads");
  m.describe("task_batches_on_caller_total", metrics::Type::counter,
             "Batches of a pipeline with several tasks that ran all of them on the pipeline "
             "thread, because the last window of fan-outs ran less than 1.3x as fast as one "
             "thread would have");
  m.describe("task_speedup", metrics::Type::gauge,
             "What fanning out bought in the last window of fanned-out batches: the tasks' time "
             "less their threads' waits for a core, over the join's wall time (1 = no gain, up "
             "to the tasks' count side by side; under 1.3 the tasks run on the pipeline thread)");
}

Pipeline::~Pipeline() {
  request_stop();
  join();
}

void Pipeline::start() {
  started_ = Clock::now();
  state_ = State::running;
  thread_ = std::thread([this] { thread_main(); });
}

void Pipeline::request_stop() {
  stop_ = true;
  cv_.notify_all();
}

void Pipeline::join() {
  if (thread_.joinable()) thread_.join();
}

bool Pipeline::done() const {
  State s = state_.load();
  return s == State::finished || s == State::stopped || s == State::failed;
}

std::string Pipeline::error() const {
  std::lock_guard<std::mutex> g(mu_);
  return error_;
}

double Pipeline::elapsed_seconds() const {
  int64_t ms = elapsed_ms_.load();
  if (ms >= 0) return ms / 1000.0;
  return seconds_since(started_);
}

metrics::Registry::Labels Pipeline::labels(const std::string& stage) const {
  metrics::Registry::Labels l{{"pipeline", spec_.name}};
  if (!stage.empty()) l.emplace_back("stage", stage);
  return l;
}

void Pipeline::fail(const std::string& msg) {
  std::lock_guard<std::mutex> g(mu_);
  error_ = msg;
}

bool Pipeline::sleep_interruptible(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lk(mu_);
  return !cv_.wait_for(lk, d, [this] { return stop_.load(); });
}

std::string Pipeline::origin(const ex_record& r) const {
  auto it = partitions_.find(r.partition);
  std::string part = it != partitions_.end() ? it->second.name : fmt::format("partition {}", r.partition);
  return fmt::format("{}@{}", part, r.offset);
}


void Pipeline::end_instance_calls() {
  // Bounded, as HostBinding::retire: a plugin thread stuck inside such a call must not
  // hang a reload or a stop. Said, because the teardown then goes on under it.
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (instance_calls_.load() != 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (instance_calls_.load() != 0)
    log::warn("pipeline:" + spec_.name, "a plugin's call from a thread of its own (partitions_assigned, "
              "partitions_revoked, standby or hold) has not returned within 2 s; the instance is "
              "torn down under it");
}

Pipeline::RunResult Pipeline::run_instance() {
  std::string scope = "pipeline:" + spec_.name;
  instance_thread_ = std::this_thread::get_id();
  Instance in;
  in.cpu_mark_ns = thread_cpu_ns();
  in.plugin_cpu_mark_ns = thread_plugin_cpu_ns();
  partitions_.clear();
  auto classify = [&](const Outcome& o) {
    return o.code == EX_ERR_CONFIG ? RunResult::failed_permanent : RunResult::failed_retry;
  };
  held_.clear();
  instance_closing_ = false;
  auto cleanup = [&](RunResult r) {
    instance_closing_ = true;
    if (r == RunResult::finished) closing_after_end_ = true;
    publish_stage_cpu(in);
    current_ = nullptr;
    end_instance_calls();
    in.teardown();
    held_.clear();
    // Every gauge its stages set goes with the instance (the next one sets its own): its
    // partitions' (its consumer left, or will be taken for gone), as at a revocation, and
    // the others. A pipeline that failed for good kept reporting partitions other hosts
    // had taken over (QA: 8 assigned of 6; then, with the per-partition gauges gone, the
    // kafka source's assigned count, 10 of 6). Every gauge with a partition is a stage's.
    metrics::global().remove_gauges_matching({{"pipeline", spec_.name}}, "stage");
    return r;
  };

  // Build: sink first so it can recover and tell where the source resumes.
  in.sink = std::make_unique<Sink>(spec_.sink, binding("sink/" + spec_.sink.plugin));
  Outcome o = in.sink->create();
  if (!o.ok()) {
    fail(in.sink->describe_create_error(o));
    return cleanup(classify(o));
  }
  if (spec_.dead_letter) {
    in.dlq = std::make_unique<Sink>(*spec_.dead_letter,
                                    binding("errors.dead-letter/" + spec_.dead_letter->plugin));
    o = in.dlq->create();
    if (!o.ok()) {
      fail(in.dlq->describe_create_error(o));
      return cleanup(classify(o));
    }
  }
  // Every task gets its own instance of every transform (same stage id: the instances
  // of one stage share metrics series, state directory and changelog).
  // Without transforms there is nothing for tasks to do: the batch goes to the sink.
  const size_t n_tasks =
      spec_.transforms.empty() ? 1 : static_cast<size_t>(std::max<int64_t>(1, spec_.threads));
  in.tasks.resize(n_tasks);
  for (size_t k = 0; k < n_tasks; ++k)
    for (size_t i = 0; i < spec_.transforms.size(); ++i) {
      auto& ts = spec_.transforms[i];
      std::string id = ts.label.empty() ? fmt::format("transforms[{}]/{}", i, ts.plugin)
                                        : fmt::format("transforms[{}]/{}", i, ts.label);
      auto t = std::make_unique<Transform>(ts, binding(id));
      o = t->create();
      if (!o.ok()) {
        fail(t->describe_create_error(o));
        return cleanup(classify(o));
      }
      in.tasks[k].transforms.push_back(std::move(t));
    }
  if (n_tasks > 1) in.pool = std::make_unique<TaskPool>(n_tasks - 1, spec_.name);
  in.source = std::make_unique<Source>(spec_.source, binding("source/" + spec_.source.plugin));
  o = in.source->create();
  if (!o.ok()) {
    fail(in.source->describe_create_error(o));
    return cleanup(classify(o));
  }
  current_ = &in;

  ex_checkpoint stored{};
  bool has_stored = false;
  o = in.sink->open(&stored, &has_stored);
  if (!o.ok()) {
    fail(in.sink->describe_call_error("open", o));
    return cleanup(classify(o));
  }
  if (in.dlq) {
    ex_checkpoint ignored{};
    bool h = false;
    o = in.dlq->open(&ignored, &h);
    if (!o.ok()) {
      fail(in.dlq->describe_call_error("open", o));
      return cleanup(classify(o));
    }
  }
  if (has_stored) {
    in.has_last = true;
    in.last_format = sv(stored.format);
    in.last_data = sv(stored.data);
    ex_checkpoint resume = in.last();
    log::info(scope, "resuming from positions stored by the sink ({})", in.last_format);
    o = in.source->open(&resume);
  } else {
    o = in.source->open(nullptr);
  }
  if (!o.ok()) {
    fail(in.source->describe_call_error("open", o));
    return cleanup(classify(o));
  }
  if (!has_stored) {
    ex_checkpoint cp{};
    o = in.source->checkpoint(&cp);
    if (!o.ok()) {
      fail(in.source->call_failure("checkpoint", o).message);
      return cleanup(classify(o));
    }
    in.has_last = true;
    in.last_format = sv(cp.format);
    in.last_data = sv(cp.data);
  }
  mark_commit(false);  // before up: /readyz must not read the last instance's commit
  metrics::global().set("pipeline_up", labels(), 1);
  log::info(scope, "running ({} -> {} transform(s) -> {}, delivery {})", spec_.source.plugin,
            spec_.transforms.size(), spec_.sink.plugin, config::to_string(spec_.delivery));

  auto interval = std::chrono::milliseconds(spec_.commit_interval_ms);
  const int64_t backlog_ms = backlog_age(interval).count();
  int retriable_polls = 0;
  std::vector<ex_record> held_kept;  // a batch without records of held partitions
  {
    std::lock_guard<std::mutex> g(reconf_mu_);
    in_rounds_ = true;
  }
  for (;;) {
    apply_reconfigure(in);
    in.round_start = Clock::now();
    const Clock::duration round_len =
        round_length<Clock::duration>(interval, in.last_commit, in.typical_commit);
    const Clock::duration min_round = round_min_length<Clock::duration>(interval, in.typical_commit);
    bool eoi = false;
    Outcome err;
    while (!stop_ && in.round_records < static_cast<uint64_t>(spec_.commit_max_records)) {
      const auto now = Clock::now();
      Clock::time_point due{};
      // A known round_oldest_ms means batch_newest_ms is set too (no INT64_MIN below).
      const bool timed = in.round_oldest_ms != std::numeric_limits<int64_t>::max();
      const int64_t wall = timed ? wall_ms() : 0;
      const bool aged = timed && wall - in.batch_newest_ms < backlog_ms;
      if (aged)  // the oldest record's timestamp + interval, moved onto the steady clock
        due = now + std::chrono::milliseconds(in.round_oldest_ms + spec_.commit_interval_ms - wall);
      const auto end = round_end(in.round_start, round_len, min_round, aged ? &due : nullptr);
      if (now >= end) break;
      auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(end - now);
      int32_t timeout = static_cast<int32_t>(std::clamp<int64_t>(remaining.count(), 1, kIdlePollMs));
      ex_batch b{};
      const auto polled_at = Clock::now();
      o = in.source->poll(timeout, &b, &eoi);
      // A stage's failure inside a rebalance the source reported: the stage's, not the source's.
      const bool stage_failure = in.callback_failure.has_value();
      if (stage_failure) {
        o = *in.callback_failure;
        in.callback_failure.reset();
      }
      // By the time it waited, not the time asked for: a source that answers at once with
      // nothing (a short poll timeout of its own, held partitions) is not idle.
      const bool idle_poll = o.ok() && b.count == 0 &&
                             Clock::now() - polled_at >= std::chrono::milliseconds(kIdlePollMs * 9 / 10);
      if (!o.ok()) {
        if (o.code == EX_ERR_RETRIABLE) {
          if (++retriable_polls % 50 == 1) log::warn(scope, "{} poll: {} (retrying)", in.source->id(), o.message);
          sleep_interruptible(std::chrono::milliseconds(100));
          continue;
        }
        // An error on a config key names its place in the file, as open()'s does.
        err = stage_failure ? o : in.source->call_failure("poll", o);
        break;
      }
      retriable_polls = 0;
      o = apply_holds(in, b, held_kept);
      if (!o.ok()) {
        err = o;
        break;
      }
      tick_standby(in);
      if (b.count > 0) {
        if (stats_.first_record_us.load(std::memory_order_relaxed) < 0)
          stats_.first_record_us = micros_since(started_);
        in.round_records += b.count;
        o = process_batch(in, &b);
        if (!o.ok()) {
          err = o;
          break;
        }
        if (Clock::now() < in.commit_fast_until) break;
      }
      if (eoi) break;
      // The source has nothing more for now: what the round holds need not wait for the
      // interval (a burst's last records, a lull). Only after a whole wait, so a trickle
      // commits at most about every kIdlePollMs.
      if (idle_poll && in.round_records > 0 && spec_.commit_when_idle) break;
    }
    // A sink's completion window (ABI 1.4) also commits rounds without new records, so
    // that the committed positions follow requests that finish later.
    in.last_commit = Clock::duration::zero();
    if (err.ok() && (in.round_records > 0 || eoi || !in.window.empty())) {
      const auto commit_start = Clock::now();
      mark_commit(true);
      err = commit_round(in, eoi);
      in.last_commit = Clock::now() - commit_start;
      in.typical_commit = next_typical_commit(in.typical_commit, in.last_commit);
    }
    publish_stage_cpu(in);
    if (!err.ok()) {
      abort_round(in, err.message);
      mark_commit(false);
      // Asked to stop, a plugin may give up a long call with any error (ABI 1.5,
      // host.stopping()): the stop it obeyed is not its failure.
      if (stop_) {
        log::info(scope, "stopping: the round is aborted ({})", err.message);
        return cleanup(RunResult::stopped);
      }
      if (err.code == EX_ERR_CONFIG) {
        stopped_by_policy_ = in.policy_stop.has_value();
        fail(err.message);  // logged by thread_main
        return cleanup(RunResult::failed_permanent);
      }
      if (err.code != EX_ERR_RETRIABLE && err.code != EX_ERR_ABORTABLE) {
        fail(err.message);
        log::error(scope, "fatal: {}", err.message);
        return cleanup(RunResult::failed_retry);
      }
      if (in.consecutive_aborts >= spec_.max_consecutive_aborts) {
        fail(fmt::format("{} rounds aborted in a row; last: {}", in.consecutive_aborts, err.message));
        return cleanup(RunResult::failed_retry);
      }
      sleep_interruptible(std::chrono::milliseconds(
          std::min<int64_t>(5000, 50LL << std::min<int64_t>(in.consecutive_aborts, 6))));
      continue;
    }
    mark_commit(false);
    if (eoi && in.window.empty()) {
      log::info(scope, "end of input");
      return cleanup(RunResult::finished);
    }
    if (stop_) return cleanup(RunResult::stopped);
  }
}

void Pipeline::mark_commit(bool running) {
  const double now =
      running ? std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() : 0.0;
  metrics::global().set("pipeline_commit_started_timestamp_seconds", labels(), now);
}

void Pipeline::thread_main() {
  use_alternate_signal_stack();
  std::string scope = "pipeline:" + spec_.name;
  auto backoff = std::chrono::milliseconds(spec_.backoff_initial_ms);
  // 0 from the start, not only after a first open: a pipeline whose create() or open()
  // hangs had no series at all, and `exactly_pipeline_up == 0` never fired for it.
  metrics::global().set("pipeline_up", labels(), 0);
  metrics::global().set("pipeline_finished", labels(), 0);
  for (;;) {
    uint64_t commits_before = stats_.commits.load();
    const auto instance_started = Clock::now();
    RunResult r = run_instance();
    {
      // No round boundary until the next instance's rounds: a reload waiting for one
      // would wait out the backoff (and the old definition would start again).
      std::lock_guard<std::mutex> g(reconf_mu_);
      in_rounds_ = false;
      if (reconf_done_) reconf_done_->set_value(false);
      reconf_done_.reset();
      reconf_spec_.reset();
    }
    metrics::global().set("pipeline_up", labels(), 0);
    // Said on stderr too, not only in the summary: create/open failures included.
    // A record that errors.policy: stop refused is the data's problem, not the config's:
    // said as the docs show it, not as "fix the configuration".
    if (r == RunResult::failed_permanent && stopped_by_policy_)
      log::error(scope, "stopped, not restarted: {}", error());
    else if (r == RunResult::failed_permanent)
      log::error(scope, "failed, not restarted (fix the configuration): {}", error());
    if (r == RunResult::finished) {
      metrics::global().set("pipeline_finished", labels(), 1);
      state_ = State::finished;
      break;
    }
    if (r == RunResult::stopped || stop_) {
      state_ = r == RunResult::failed_permanent ? State::failed : State::stopped;
      break;
    }
    if (r == RunResult::failed_permanent) {
      state_ = State::failed;
      break;
    }
    // An instance that made progress and lasted earns a fresh backoff. Commits alone are
    // not enough: behind a source that stores no positions every instance commits the
    // same records again before the same failure, and the host would loop at the
    // initial delay, duplicating its output once a second.
    const auto lasted = Clock::now() - instance_started;
    if (stats_.commits.load() > commits_before && lasted >= std::chrono::milliseconds(spec_.backoff_max_ms))
      backoff = std::chrono::milliseconds(spec_.backoff_initial_ms);
    stats_.restarts++;
    metrics::global().add("restarts_total", labels(), 1);
    log::warn(scope, "restarting in {} ms after: {}", backoff.count(), error());
    if (!sleep_interruptible(backoff)) {
      state_ = State::stopped;
      break;
    }
    backoff = std::min(backoff * 2, std::chrono::milliseconds(spec_.backoff_max_ms));
  }
  elapsed_ms_ = static_cast<int64_t>(seconds_since(started_) * 1000);
  {
    std::lock_guard<std::mutex> g(reconf_mu_);
    if (reconf_done_) reconf_done_->set_value(false);
    reconf_done_.reset();
  }
  cv_.notify_all();
}

}  // namespace exactly::engine
