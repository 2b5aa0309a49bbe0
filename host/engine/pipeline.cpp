#include "engine/pipeline.hpp"

#include "engine/fatal_signal.hpp"
#include "engine/standby_set.hpp"
#include "engine/task_pool.hpp"

#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace exactly::engine {
namespace {
using Clock = std::chrono::steady_clock;

std::string sv(ex_bytes b) {
  return b.ptr ? std::string(reinterpret_cast<const char*>(b.ptr), b.len) : std::string();
}
ex_bytes bv(const std::string& s) {
  return ex_bytes{reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
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

// A rejected record kept until the tasks of a batch are joined (handle_reject runs on
// the pipeline thread): a deep copy in the task's arena.
struct TaskReject {
  std::string stage;
  ex_record record;
  std::string reason;
};

// One share of the pipeline's partitions (partition id % tasks) with its own instances of
// every transform: its records go through them on a thread of their own.
struct Task {
  std::vector<std::unique_ptr<Transform>> transforms;
  Arena arena;                       // records the transforms emit, rejected copies
  std::vector<ex_record> in;         // its share of the batch, in batch order
  std::vector<ex_record> bufs[2];
  const ex_batch* out = nullptr;     // what its last transform kept
  ex_batch views[2]{};
  ex_batch in_view{};
  std::vector<TaskReject> rejects;
  Outcome failure;
};

// One build of the pipeline's plugin objects. Torn down source first, so nothing
// the source does while closing (a consumer's final revocation) reaches stages
// that are already gone.
struct Pipeline::Instance {
  std::unique_ptr<Sink> sink;
  std::unique_ptr<Sink> dlq;
  std::vector<Task> tasks;  // at least one
  std::unique_ptr<TaskPool> pool;
  std::vector<ex_record> merged;  // the tasks' outputs, for the sink
  std::unique_ptr<Source> source;

  bool has_last = false;  // last committed positions (what an abort rewinds to)
  std::string last_format, last_data;
  uint64_t round_records = 0;
  uint64_t round_out = 0, round_rejected = 0;  // folded into the stats when it commits
  // Per partition id: the source position after the last record read this round.
  std::map<int32_t, int64_t> round_positions;
  int64_t consecutive_aborts = 0;
  Clock::time_point round_start = Clock::now();
  // For commit.after.takeover after partitions are assigned (not the instance's first
  // assignment) or resumed, a round ends after each batch: a takeover's first output is
  // visible without waiting out commit.interval.
  Clock::time_point commit_fast_until{};
  bool assigned_before = false;

  Arena arena;
  std::vector<ex_record> dlq_pending;
  std::optional<std::string> policy_stop;
  std::optional<Outcome> callback_failure;
  StandbySet standby;  // partitions the source wants kept warm here (ABI 1.2)
  int64_t standby_failures = 0;

  ex_checkpoint last() const {
    return ex_checkpoint{sizeof(ex_checkpoint), bv(last_format), bv(last_data)};
  }
  void teardown() {
    source.reset();
    pool.reset();
    tasks.clear();
    dlq.reset();
    sink.reset();
  }
  size_t task_of(int32_t partition_id) const {
    return static_cast<size_t>(partition_id < 0 ? 0 : partition_id) % tasks.size();
  }
  // The partitions of `parts` that belong to each task.
  std::vector<std::vector<ex_partition>> split(const std::vector<ex_partition>& parts) const {
    std::vector<std::vector<ex_partition>> out(tasks.size());
    for (const auto& x : parts) out[task_of(x.id)].push_back(x);
    return out;
  }
};

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
  m.describe("batch_latency_seconds", metrics::Type::histogram,
             "Time to run one batch through transforms and sink");
  m.describe("pipeline_up", metrics::Type::gauge, "1 while the pipeline runs");
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

// ---------------------------------------------------------------- host callbacks


std::unique_ptr<HostBinding> Pipeline::binding(const std::string& component_id) {
  auto b = std::make_unique<HostBinding>();
  b->pipeline = spec_.name;
  b->component_id = component_id;
  b->api.struct_size = sizeof(ex_host_api);
  b->owner = this;
  b->api.ctx = b.get();
  b->api.pipeline_name = b->pipeline.c_str();
  b->api.component_id = b->component_id.c_str();
  b->api.log = &Pipeline::cb_log;
  b->api.metric = &Pipeline::cb_metric;
  b->api.partitions_assigned = &Pipeline::cb_assigned;
  b->api.partitions_revoked = &Pipeline::cb_revoked;
  b->api.state_supported = &Pipeline::cb_state_supported;
  b->api.state_open = &Pipeline::cb_state_open;
  b->api.state_read = &Pipeline::cb_state_read;
  b->api.state_write = &Pipeline::cb_state_write;
  b->api.state_position = &Pipeline::cb_state_position;
  b->api.standby = &Pipeline::cb_standby;
  b->api.hold = &Pipeline::cb_hold;
  b->api.release = &Pipeline::cb_release;
  return b;
}

namespace {
Pipeline* owner_of(void* ctx) {
  return static_cast<Pipeline*>(static_cast<HostBinding*>(ctx)->owner);
}
}  // namespace

void Pipeline::cb_log(void* ctx, int32_t level, const char* msg, size_t len) {
  auto* p = owner_of(ctx);
  std::string scope = "pipeline:" + p->spec_.name;
  log::write(static_cast<log::Level>(std::clamp(level, 0, 3)), scope, std::string_view(msg, len));
}

void Pipeline::cb_metric(void* ctx, int32_t kind, const char* name, const char* labels, double v) {
  auto* p = owner_of(ctx);
  if (name == nullptr) return;
  // The stage label keeps two instances of one plugin (a sink and a dead-letter sink,
  // say) in separate series.
  auto l = p->labels(static_cast<HostBinding*>(ctx)->component_id);
  for (auto& kv : metrics::Registry::parse_labels(labels ? labels : "")) l.push_back(kv);
  if (kind == EX_METRIC_COUNTER)
    metrics::global().add(name, l, v);
  else
    metrics::global().set(name, l, v);
}

int32_t Pipeline::cb_assigned(void* ctx, const ex_partition* parts, size_t n, ex_error* err) {
  auto* p = owner_of(ctx);
  Instance* in = p->current_;
  if (in == nullptr) return EX_OK;
  std::vector<ex_partition> copy(parts, parts + n);
  if (n > 0 && std::exchange(in->assigned_before, true))
    in->commit_fast_until = Clock::now() + std::chrono::milliseconds(p->spec_.commit_after_takeover_ms);
  for (auto& x : copy) {
    p->partitions_[x.id] = PartitionInfo{sv(x.name), sv(x.topic), x.number, x.start_offset};
    log::info("pipeline:" + p->spec_.name, "assigned {} (resume at offset {})", sv(x.name),
              x.start_offset);
  }
  auto report = [&](const Outcome& o, const std::string& who) {
    std::string msg = fmt::format("{} refused the assignment: {}", who, o.message);
    in->callback_failure = Outcome{o.code, msg, o.key};
    if (err) {
      err->code = o.code;
      std::snprintf(err->message, sizeof(err->message), "%s", msg.c_str());
    }
    return o.code;
  };
  auto shares = in->split(copy);
  for (size_t k = 0; k < in->tasks.size(); ++k) {
    if (shares[k].empty()) continue;
    for (auto& t : in->tasks[k].transforms) {
      Outcome o = t->assign(shares[k]);
      if (!o.ok()) return report(o, t->id());
    }
  }
  if (in->sink) {
    Outcome o = in->sink->assign(copy);
    if (!o.ok()) return report(o, in->sink->id());
  }
  return EX_OK;
}

int32_t Pipeline::cb_revoked(void* ctx, const ex_partition* parts, size_t n, ex_error* err) {
  auto* p = owner_of(ctx);
  Instance* in = p->current_;
  if (in == nullptr) return EX_OK;
  std::string scope = "pipeline:" + p->spec_.name;
  // Commit what was read so far before the partitions go: the next owner resumes
  // exactly where this round ends. Unless they are lost: then another member may own
  // them already, and this round must not commit anything of theirs.
  const bool lost = std::any_of(parts, parts + n, [](const ex_partition& x) {
    return x.start_offset == EX_PARTITION_LOST;
  });
  if (lost && in->round_records > 0) {
    p->abort_round(*in, "partitions were lost (the group moved on without this member); the "
                        "new owner replays the round");
  } else if (in->round_records > 0) {
    Outcome o = p->commit_round(*in);
    if (!o.ok()) {
      log::warn(scope, "commit before revocation failed ({}); the next owner replays the round",
                o.message);
      p->abort_round(*in, o.message);
    }
  }
  std::vector<ex_partition> copy(parts, parts + n);
  auto shares = in->split(copy);
  for (size_t k = 0; k < in->tasks.size(); ++k) {
    if (shares[k].empty()) continue;
    for (auto& t : in->tasks[k].transforms) {
      Outcome o = t->revoke(shares[k]);
      if (!o.ok()) {
        in->callback_failure = o;
        if (err) err->code = o.code;
      }
    }
  }
  if (in->sink) in->sink->revoke(copy);
  for (auto& x : copy) {
    log::info(scope, "revoked {}", sv(x.name));
    p->partitions_.erase(x.id);
    p->held_.forget(x.id);
  }
  return EX_OK;
}

// State changelogs: the sink keeps them for the transforms (ABI 1.1).
namespace {
int32_t state_error(ex_error* err, const Outcome& o) {
  if (err != nullptr && !o.ok()) {
    err->code = o.code;
    std::snprintf(err->message, sizeof(err->message), "%s", o.message.c_str());
    std::snprintf(err->key, sizeof(err->key), "%s", o.key.c_str());
  }
  return o.code;
}
}  // namespace

// The sink of the running instance, or nullptr (then the call fails as FATAL).
Sink* Pipeline::state_sink(void* ctx) {
  Instance* in = owner_of(ctx)->current_;
  return in != nullptr ? in->sink.get() : nullptr;
}
namespace {
const Outcome kNoSink = Outcome::make(EX_ERR_FATAL, "no sink to keep state");
}

int32_t Pipeline::cb_state_supported(void* ctx) {
  Sink* s = state_sink(ctx);
  return s != nullptr && s->has_state() ? 1 : 0;
}
int32_t Pipeline::cb_state_open(void* ctx, ex_bytes store, const ex_partition* part,
                                ex_state_info* info, ex_error* err) {
  Sink* s = state_sink(ctx);
  return state_error(err, s ? s->state_open(store, part, info) : kNoSink);
}
int32_t Pipeline::cb_state_read(void* ctx, ex_bytes store, const ex_partition* part, int64_t from,
                                ex_state_record_fn fn, void* fn_ctx, ex_error* err) {
  Sink* s = state_sink(ctx);
  return state_error(err, s ? s->state_read(store, part, from, fn, fn_ctx) : kNoSink);
}
int32_t Pipeline::cb_state_write(void* ctx, ex_bytes store, const ex_partition* part, ex_bytes key,
                                 ex_bytes value, ex_error* err) {
  Sink* s = state_sink(ctx);
  return state_error(err, s ? s->state_write(store, part, key, value) : kNoSink);
}
int64_t Pipeline::cb_state_position(void* ctx, ex_bytes store, const ex_partition* part) {
  Sink* s = state_sink(ctx);
  return s ? s->state_position(store, part) : -1;
}

int32_t Pipeline::cb_standby(void* ctx, const ex_partition* parts, size_t n, ex_error*) {
  auto* p = owner_of(ctx);
  Instance* in = p->current_;
  if (in == nullptr) return EX_OK;
  in->standby.replace(parts, n);
  return EX_OK;
}

int32_t Pipeline::cb_hold(void* ctx, const ex_partition* part, ex_error* err) {
  auto* p = owner_of(ctx);
  Instance* in = p->current_;
  auto refuse = [&](const std::string& why) {
    if (err) {
      err->code = EX_ERR_UNSUPPORTED;
      std::snprintf(err->message, sizeof(err->message), "%s", why.c_str());
    }
    return int32_t{EX_ERR_UNSUPPORTED};
  };
  if (in == nullptr || part == nullptr) return refuse("no running pipeline");
  if (!in->source || !in->source->can_pause_partitions())
    return refuse("the source cannot pause single partitions");
  Outcome probe = in->source->pause_partitions({}, true);  // n == 0: "can you?"
  if (!probe.ok()) return refuse(probe.message);
  // A stage holding a partition reads state from its own thread; only a sink built for
  // 1.2 promises to allow that.
  if (!in->sink || in->sink->abi_minor() < 2)
    return refuse("the sink was built for an ABI older than 1.2");
  p->held_.hold(*part);
  log::info("pipeline:" + p->spec_.name, "{} holds back {} while it prepares it; the other "
            "partitions go on", static_cast<HostBinding*>(ctx)->component_id, sv(part->name));
  return EX_OK;
}

void Pipeline::cb_release(void* ctx, const ex_partition* part) {
  if (part != nullptr) owner_of(ctx)->held_.release(part->id);
}

// After a poll: pauses asked for by holds, resumes of released partitions, and the
// batch without records of partitions that are held or were paused or resumed just now.
// A pause or a resume puts the source back at the partition's start, so records of it
// that this poll returned are read again later: letting them through as well would emit
// them twice (a hold and its release can both land while one poll runs).
Outcome Pipeline::apply_holds(Instance& in, ex_batch& b, std::vector<ex_record>& kept) {
  std::string scope = "pipeline:" + spec_.name;
  auto to_abi = [](const std::vector<HeldPartitions::Part>& parts) {
    std::vector<ex_partition> v;
    for (const auto& x : parts) v.push_back(x.abi());
    return v;
  };
  std::vector<int32_t> repositioned;
  auto pauses = held_.take_pauses();
  if (!pauses.empty()) {
    Outcome o = in.source->pause_partitions(to_abi(pauses), true);
    if (!o.ok()) return Outcome{EX_ERR_FATAL, "source could not pause a held partition: " + o.message, o.key};
    for (const auto& x : pauses) repositioned.push_back(x.id);
  }
  auto resumes = held_.take_resumes();
  if (!resumes.empty()) {
    Outcome o = in.source->pause_partitions(to_abi(resumes), false);
    if (!o.ok()) return Outcome{EX_ERR_FATAL, "source could not resume a held partition: " + o.message, o.key};
    in.commit_fast_until = Clock::now() + std::chrono::milliseconds(spec_.commit_after_takeover_ms);
    for (const auto& x : resumes) {
      repositioned.push_back(x.id);
      log::info(scope, "resumed {} at offset {}: its stages are ready", x.name, x.start);
    }
  }
  if ((held_.empty() && repositioned.empty()) || b.count == 0) return {};
  auto dropped = [&](int32_t id) {
    return held_.held(id) || std::find(repositioned.begin(), repositioned.end(), id) != repositioned.end();
  };
  kept.clear();
  for (size_t i = 0; i < b.count; ++i) {
    const ex_record& r = *reinterpret_cast<const ex_record*>(reinterpret_cast<const char*>(b.records) +
                                                             i * b.record_size);
    if (!dropped(r.partition)) kept.push_back(r);
  }
  if (kept.size() != b.count) {
    b.records = kept.data();
    b.count = kept.size();
    b.record_size = sizeof(ex_record);
  }
  return {};
}

// Hands the standby set to the stages that keep warm copies: when it changed, and once a
// tick, so they catch up between rounds. A failure costs only restore time later.
void Pipeline::tick_standby(Instance& in) {
  auto now = StandbySet::Clock::now();
  if (!in.standby.due(now)) return;
  const auto& parts = in.standby.without([&](int32_t id) { return partitions_.count(id) != 0; });
  // Every task hears its share, an empty one too: it drops the copies it no longer needs.
  auto shares = in.split(parts);
  for (size_t k = 0; k < in.tasks.size(); ++k)
    for (auto& t : in.tasks[k].transforms) {
      if (!t->has_standby()) continue;
      Outcome o = t->standby(shares[k]);
      if (!o.ok() && in.standby_failures++ % 30 == 0)
        log::warn("pipeline:" + spec_.name, "{} could not keep its standby copies warm ({}); "
                  "a partition moving here restores in full", t->id(), o.message);
    }
  in.standby.called(now);
  metrics::global().set("standby_partitions", labels(), static_cast<double>(parts.size()));
}

// ---------------------------------------------------------------- record path

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
      in.dlq_pending.push_back(in.arena.copy(r, extra));  // copies the strings too
      stats_.dead_lettered++;
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
};
const ex_record& at(const ex_batch* b, size_t i) {
  return *reinterpret_cast<const ex_record*>(reinterpret_cast<const char*>(b->records) +
                                             i * b->record_size);
}
}  // namespace

std::string Pipeline::batch_origin(const ex_batch* b) const {
  std::string first = origin(at(b, 0));
  return b->count > 1 ? fmt::format("{} and {} more", first, b->count - 1) : first;
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
    EmitCtx ctx{cur, &out, &task, &stage};
    ex_emitter em{sizeof(ex_emitter), &ctx,
                  [](void* c, size_t idx) -> int32_t {
                    auto* x = static_cast<EmitCtx*>(c);
                    if (idx >= x->in->count) return EX_ERR_FATAL;
                    x->out->push_back(at(x->in, idx));
                    return EX_OK;
                  },
                  [](void* c, const ex_record* r) -> int32_t {
                    auto* x = static_cast<EmitCtx*>(c);
                    x->out->push_back(x->task->arena.copy(*r));
                    return EX_OK;
                  },
                  [](void* c, size_t idx, const char* m, size_t n) -> int32_t {
                    auto* x = static_cast<EmitCtx*>(c);
                    if (idx < x->in->count)
                      x->task->rejects.push_back(
                          TaskReject{*x->stage, x->task->arena.copy(at(x->in, idx)), std::string(m, n)});
                    return EX_OK;
                  }};
    if (cur->count > 0) set_next_call_origin(batch_origin(cur));
    Outcome o = t->process(cur, &em);
    if (!o.ok()) {
      o.message = fmt::format("{}: {}", stage, o.message);
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

Outcome Pipeline::process_batch(Instance& in, const ex_batch* batch) {
  auto t0 = Clock::now();
  in.arena.reset();
  in.dlq_pending.clear();
  // Records of one partition come in runs: one map lookup per run, not per record.
  int64_t* pos = nullptr;
  int32_t pos_of = 0;
  for (size_t i = 0; i < batch->count; ++i) {
    const ex_record& r = at(batch, i);
    if (pos == nullptr || r.partition != pos_of) {
      pos_of = r.partition;
      pos = &in.round_positions.try_emplace(pos_of, -1).first->second;
    }
    *pos = std::max(*pos, r.offset + 1);
  }
  metrics::global().add("records_in_total", labels(), static_cast<double>(batch->count));

  // The tasks: each its share of the batch (partition id % tasks, batch order kept).
  const size_t n = in.tasks.size();
  for (auto& task : in.tasks) {
    task.arena.reset();
    task.out = nullptr;
  }
  if (n == 1) {
    run_task(in.tasks[0], batch);
  } else {
    for (auto& task : in.tasks) task.in.clear();
    for (size_t i = 0; i < batch->count; ++i) {
      const ex_record& r = at(batch, i);
      in.tasks[in.task_of(r.partition)].in.push_back(r);
    }
    in.pool->run(n, [&](size_t k) {
      Task& task = in.tasks[k];
      if (task.in.empty()) return;
      task.in_view = ex_batch{sizeof(ex_batch), sizeof(ex_record), task.in.data(), task.in.size()};
      run_task(task, &task.in_view);
    });
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
  } sctx{this, &in, cur, in.sink->id(), &sink_rejects};
  ex_record_errors errs{sizeof(ex_record_errors), &sctx,
                        [](void* c, size_t idx, const char* m, size_t n) -> int32_t {
                          auto* x = static_cast<SinkCtx*>(c);
                          if (idx >= x->batch->count) return EX_ERR_FATAL;
                          ++*x->count;
                          x->p->handle_reject(*x->in, x->stage, at(x->batch, idx), std::string(m, n));
                          return EX_OK;
                        }};
  if (cur->count > 0) {
    set_next_call_origin(batch_origin(cur));
    Outcome o = in.sink->write(cur, &errs);
    if (!o.ok()) {
      o.message = fmt::format("{}: {}", in.sink->id(), o.message);
      return o;
    }
  }
  if (in.policy_stop) return Outcome::make(EX_ERR_CONFIG, *in.policy_stop);
  if (!in.dlq_pending.empty()) {
    ex_batch d{sizeof(ex_batch), sizeof(ex_record), in.dlq_pending.data(), in.dlq_pending.size()};
    size_t dlq_rejects = 0;
    struct DlqCtx {
      size_t* n;
    } dctx{&dlq_rejects};
    ex_record_errors derrs{sizeof(ex_record_errors), &dctx,
                           [](void* c, size_t, const char*, size_t) -> int32_t {
                             ++*static_cast<DlqCtx*>(c)->n;
                             return EX_OK;
                           }};
    Outcome o = in.dlq->write(&d, &derrs);
    if (!o.ok()) {
      o.message = fmt::format("dead-letter sink: {}", o.message);
      return o;
    }
    // A record the dead-letter sink refuses has nowhere left to go: stop, never drop.
    if (dlq_rejects > 0)
      return Outcome::make(EX_ERR_CONFIG, fmt::format("the dead-letter sink rejected {} record(s); "
                                                      "stopping rather than losing them",
                                                      dlq_rejects));
  }
  uint64_t out = cur->count - sink_rejects;
  in.round_out += out;
  metrics::global().add("records_out_total", labels(), static_cast<double>(out));
  metrics::global().observe("batch_latency_seconds", labels(), seconds_since(t0));
  return {};
}

// ---------------------------------------------------------------- commit protocol

Outcome Pipeline::commit_round(Instance& in) {
  auto t0 = Clock::now();
  ex_checkpoint cp{};
  Outcome o = in.source->checkpoint(&cp);
  if (!o.ok()) return o;
  std::string fmt_s = sv(cp.format), data_s = sv(cp.data);
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
        if (!o.ok()) return Outcome{o.code, t->id() + " positions: " + o.message, o.key};
      }
    }
  }
  // Serially, on this thread: a stage's changelog records go into the sink's round.
  for (auto& task : in.tasks)
    for (auto& t : task.transforms) {
      o = t->prepare_commit();
      if (!o.ok()) return Outcome{o.code, t->id() + " prepare_commit: " + o.message, o.key};
    }
  o = in.sink->prepare_commit();
  if (!o.ok()) return Outcome{o.code, in.sink->id() + " prepare_commit: " + o.message, o.key};
  // Dead letters are flushed before the main commit: never lost, at worst repeated.
  if (in.dlq) {
    uint32_t f = 0;
    o = in.dlq->prepare_commit();
    if (o.ok()) o = in.dlq->commit(nullptr, &f);
    if (!o.ok()) return Outcome{o.code, "dead-letter sink: " + o.message, o.key};
  }
  // 2. the sink commits output and, when it can, the positions with it
  uint32_t flags = 0;
  o = in.sink->commit(&positions, &flags);
  if (!o.ok()) return Outcome{o.code, in.sink->id() + " commit: " + o.message, o.key};
  if ((flags & EX_SINK_STORED_POSITIONS) != 0 && (flags & EX_SINK_POSITIONS_IN_SOURCE) == 0) {
    // The sink keeps the positions with its output; the source's own store follows, so
    // that whoever resumes a partition from it (another host of the group, or this one
    // after a rebalance) does not start over. Best effort: the sink's copy is the truth.
    o = in.source->commit(&positions);
    if (!o.ok())
      log::warn("pipeline:" + spec_.name, "source could not mirror the positions the sink stored ({})",
                o.message);
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
                "source could not commit its positions ({}); they are committed with the next round",
                o.message);
  }
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
  stats_.records_out += in.round_out;
  stats_.rejected += in.round_rejected;
  in.round_records = in.round_out = in.round_rejected = 0;
  in.consecutive_aborts = 0;
  stats_.commits++;
  metrics::global().add("commits_total", labels(), 1);
  metrics::global().observe("commit_latency_seconds", labels(), seconds_since(t0));
  return {};
}

void Pipeline::abort_round(Instance& in, const std::string& why) {
  std::string scope = "pipeline:" + spec_.name;
  log::warn(scope, "aborting round of {} records: {}", in.round_records, why);
  if (in.sink) in.sink->abort();
  if (in.dlq) in.dlq->abort();
  for (auto& task : in.tasks)
    for (auto& t : task.transforms) t->abort();
  if (in.source) {
    ex_checkpoint last = in.last();
    Outcome o = in.source->rewind(&last);
    if (!o.ok()) {
      in.callback_failure = Outcome{EX_ERR_FATAL, "rewind failed: " + o.message, {}};
    }
  }
  stats_.replayed += in.round_records;
  in.round_records = in.round_out = in.round_rejected = 0;
  in.round_positions.clear();
  in.consecutive_aborts++;
  stats_.aborts++;
  metrics::global().add("aborts_total", labels(), 1);
}

// ---------------------------------------------------------------- hot reload

std::future<bool> Pipeline::request_reconfigure(const config::PipelineSpec& next) {
  std::lock_guard<std::mutex> g(reconf_mu_);
  if (reconf_done_) reconf_done_->set_value(false);  // superseded
  reconf_spec_ = next;
  reconf_done_.emplace();
  return reconf_done_->get_future();
}

void Pipeline::apply_reconfigure(Instance& in) {
  std::lock_guard<std::mutex> g(reconf_mu_);
  if (!reconf_spec_) return;
  const config::PipelineSpec& next = *reconf_spec_;
  const auto& stages = in.tasks[0].transforms;  // every task has the same stages
  bool ok = next.transforms.size() == stages.size();
  auto refuse = [&](const std::string& id, const Outcome& o) {
    log::info("pipeline:" + spec_.name, "{} cannot change in place ({}); restarting instead", id,
              o.message);
    ok = false;
  };
  for (size_t i = 0; ok && i < stages.size(); ++i) {
    if (next.transforms[i].fingerprint() == stages[i]->spec().fingerprint()) continue;
    for (auto& task : in.tasks) {
      Outcome o = task.transforms[i]->reconfigure(next.transforms[i]);
      if (!o.ok()) {
        refuse(task.transforms[i]->id(), o);
        break;
      }
    }
  }
  if (ok && next.source.fingerprint() != in.source->spec().fingerprint()) {
    Outcome o = in.source->reconfigure(next.source);
    if (!o.ok()) refuse(in.source->id(), o);
  }
  if (ok && next.sink.fingerprint() != in.sink->spec().fingerprint()) {
    Outcome o = in.sink->reconfigure(next.sink);
    if (!o.ok()) refuse(in.sink->id(), o);
  }
  if (ok) {
    spec_ = next;
    log::info("pipeline:" + spec_.name, "transform parameters changed in place");
  }
  reconf_done_->set_value(ok);
  reconf_done_.reset();
  reconf_spec_.reset();
}

// ---------------------------------------------------------------- lifecycle

Pipeline::RunResult Pipeline::run_instance() {
  std::string scope = "pipeline:" + spec_.name;
  Instance in;
  partitions_.clear();
  auto classify = [&](const Outcome& o) {
    return o.code == EX_ERR_CONFIG ? RunResult::failed_permanent : RunResult::failed_retry;
  };
  held_.clear();
  auto cleanup = [&](RunResult r) {
    current_ = nullptr;
    in.teardown();
    held_.clear();
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
  const size_t n_tasks = static_cast<size_t>(std::max<int64_t>(1, spec_.threads));
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
  if (o.ok() && in.dlq) {
    ex_checkpoint ignored{};
    bool h = false;
    o = in.dlq->open(&ignored, &h);
  }
  if (!o.ok()) {
    fail(fmt::format("sink open: {}", o.message));
    return cleanup(classify(o));
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
    fail(fmt::format("source open: {}", o.message));
    return cleanup(classify(o));
  }
  if (!has_stored) {
    ex_checkpoint cp{};
    o = in.source->checkpoint(&cp);
    if (!o.ok()) {
      fail(fmt::format("source checkpoint: {}", o.message));
      return cleanup(classify(o));
    }
    in.has_last = true;
    in.last_format = sv(cp.format);
    in.last_data = sv(cp.data);
  }
  metrics::global().set("pipeline_up", labels(), 1);
  log::info(scope, "running ({} -> {} transform(s) -> {}, delivery {})", spec_.source.plugin,
            spec_.transforms.size(), spec_.sink.plugin, config::to_string(spec_.delivery));

  auto interval = std::chrono::milliseconds(spec_.commit_interval_ms);
  int retriable_polls = 0;
  std::vector<ex_record> held_kept;  // a batch without records of held partitions
  for (;;) {
    apply_reconfigure(in);
    in.round_start = Clock::now();
    bool eoi = false;
    Outcome err;
    while (!stop_ && in.round_records < static_cast<uint64_t>(spec_.commit_max_records)) {
      auto elapsed = Clock::now() - in.round_start;
      if (elapsed >= interval) break;
      auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(interval - elapsed);
      int32_t timeout = static_cast<int32_t>(std::clamp<int64_t>(remaining.count(), 1, 100));
      ex_batch b{};
      o = in.source->poll(timeout, &b, &eoi);
      if (in.callback_failure) {
        o = *in.callback_failure;
        in.callback_failure.reset();
      }
      if (!o.ok()) {
        if (o.code == EX_ERR_RETRIABLE) {
          if (++retriable_polls % 50 == 1) log::warn(scope, "source: {} (retrying)", o.message);
          sleep_interruptible(std::chrono::milliseconds(100));
          continue;
        }
        err = Outcome{o.code, "source: " + o.message, o.key};
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
        in.round_records += b.count;
        o = process_batch(in, &b);
        if (!o.ok()) {
          err = o;
          break;
        }
        if (Clock::now() < in.commit_fast_until) break;
      }
      if (eoi) break;
    }
    if (err.ok() && (in.round_records > 0 || eoi)) err = commit_round(in);
    if (!err.ok()) {
      abort_round(in, err.message);
      if (err.code == EX_ERR_CONFIG) {
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
    if (eoi) {
      log::info(scope, "end of input");
      return cleanup(RunResult::finished);
    }
    if (stop_) return cleanup(RunResult::stopped);
  }
}

void Pipeline::thread_main() {
  use_alternate_signal_stack();
  std::string scope = "pipeline:" + spec_.name;
  auto backoff = std::chrono::milliseconds(spec_.backoff_initial_ms);
  for (;;) {
    uint64_t commits_before = stats_.commits.load();
    RunResult r = run_instance();
    metrics::global().set("pipeline_up", labels(), 0);
    // Said on stderr too, not only in the summary: create/open failures included.
    if (r == RunResult::failed_permanent)
      log::error(scope, "failed, not restarted (fix the configuration): {}", error());
    if (r == RunResult::finished) {
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
    // An instance that made progress earns a fresh backoff.
    if (stats_.commits.load() > commits_before) backoff = std::chrono::milliseconds(spec_.backoff_initial_ms);
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
