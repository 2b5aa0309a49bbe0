// What plugins call on the host (ex_host_api): logs, metrics, rebalances, state calls,
// standbys, holds; and the pipeline-thread side of holds and standbys.
#include "engine/pipeline_instance.hpp"

#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>

namespace exactly::engine {

std::unique_ptr<HostBinding> Pipeline::binding(const std::string& component_id) {
  auto b = std::make_unique<HostBinding>();
  b->pipeline = spec_.name;
  b->component_id = component_id;
  b->api.struct_size = sizeof(ex_host_api);
  b->owner = this;
  b->api.ctx = b->ctx();
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
  b->api.stopping = &Pipeline::cb_stopping;
  return b;
}


namespace {
// A plugin line longer than this is cut (saying by how much): one runaway message (a
// whole batch dumped into a log call) must not fill the log or the disk under it.
constexpr size_t kMaxPluginLine = 16 * 1024;
// Lines a retired component may still log (a thread it did not stop) before the rest
// are dropped.
constexpr int64_t kLateLines = 100;
}  // namespace

// Needs nothing of the pipeline: the binding carries its names, so a late line is still
// attributed to its pipeline, stage and library.
void Pipeline::cb_log(ex_host_ctx ctx, int32_t level, const char* msg, size_t len) {
  HostCall call(ctx);
  HostBinding& b = call.binding();
  const std::string scope = "pipeline:" + b.pipeline;
  const auto lvl = static_cast<log::Level>(std::clamp(level, 0, 3));
  if (msg == nullptr) len = 0;
  std::string cut;
  std::string_view text(msg, len);
  if (len > kMaxPluginLine) {
    cut = fmt::format("{} [... {} more bytes cut by the host]", text.substr(0, kMaxPluginLine),
                      len - kMaxPluginLine);
    text = cut;
  }
  if (call.owner() != nullptr) return log::write(lvl, scope, text);
  const int64_t n = b.late_lines.fetch_add(1);
  if (n == 0)
    log::warn(scope, "stage '{}' ({}) still logs after its destroy(): a thread it started "
              "outlives its instance, against the ABI's lifetime rule; its lines are marked "
              "'after destroy', the first {} kept", b.component_id, b.library_path, kLateLines);
  if (n < kLateLines)
    log::write(lvl, scope, fmt::format("[{} after destroy] {}", b.component_id, text));
  else if (n == kLateLines)
    log::warn(scope, "stage '{}' ({}): further lines after its destroy() are dropped",
              b.component_id, b.library_path);
}

// A retired component is told to stop: the host is done with it.
int32_t Pipeline::cb_stopping(ex_host_ctx ctx) {
  HostCall call(ctx);
  Pipeline* p = call.owner();
  return p == nullptr || p->stop_.load() || p->instance_closing_.load() ? 1 : 0;
}

void Pipeline::cb_metric(ex_host_ctx ctx, int32_t kind, const char* name, const char* labels, double v) {
  HostCall call(ctx);
  Pipeline* p = call.owner();
  // A retired component's series would outlive it (or reappear after a reload removed it).
  if (p == nullptr || name == nullptr) return;
  const std::string& stage = call.binding().component_id;
  // A name or label that Prometheus refuses would make a scraper drop the whole page,
  // every other series with it: such a series is dropped instead, said once.
  auto refuse = [&](const std::string& why) {
    static std::mutex mu;
    static std::set<std::string> said;
    std::lock_guard<std::mutex> g(mu);
    if (said.insert(p->spec_.name + "\n" + stage + "\n" + name).second)
      log::warn("pipeline:" + p->spec_.name, "{}: metric '{}' dropped: {}", stage, name, why);
  };
  if (!metrics::Registry::valid_name(name))
    return refuse("not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)");
  // The stage label keeps two instances of one plugin (a sink and a dead-letter sink,
  // say) in separate series.
  auto l = p->labels(stage);
  const std::string raw = labels ? labels : "";
  auto extra = metrics::Registry::parse_labels(raw);
  if (!raw.empty() && extra.size() != static_cast<size_t>(std::count(raw.begin(), raw.end(), ',')) + 1)
    return refuse("labels '" + raw + "' are not k=v pairs separated by commas");
  for (auto& kv : extra) {
    for (auto& other : l)
      if (other.first == kv.first) return refuse("label '" + kv.first + "' given twice");
    if (!metrics::Registry::valid_label_name(kv.first))
      return refuse("label name '" + kv.first + "' is not a Prometheus label name");
    if (kv.first == "le" || kv.first == "quantile") return refuse("label '" + kv.first + "' is reserved");
    l.push_back(kv);
  }
  if (kind == EX_METRIC_COUNTER) {
    // A counter that goes down reads as a reset to rate(); NaN would stick for good.
    if (!std::isfinite(v) || v < 0)
      return refuse(fmt::format("a counter's increment must be a finite number >= 0, got {} (each such "
                                "increment is dropped)", v));
    metrics::global().add(name, l, v);
  } else {
    metrics::global().set(name, l, v);
  }
}

namespace {
int32_t retired_call(ex_error* err, const HostCall& call, const char* what) {
  if (err != nullptr) {
    err->code = EX_ERR_FATAL;
    std::snprintf(err->message, sizeof(err->message), "%s after stage '%s' was destroyed", what,
                  call.binding().component_id.c_str());
  }
  return EX_ERR_FATAL;
}

// partitions_assigned or partitions_revoked from a thread other than the instance's.
int32_t foreign_thread_call(ex_error* err, const HostCall& call, const char* what) {
  if (err != nullptr) {
    err->code = EX_ERR_FATAL;
    std::snprintf(err->message, sizeof(err->message),
                  "%s refused: stage '%s' called it from a thread of its own; a source reports "
                  "its partitions from inside the host's calls (poll, open), on the pipeline's thread",
                  what, call.binding().component_id.c_str());
  }
  return EX_ERR_FATAL;
}
}  // namespace

int32_t Pipeline::cb_assigned(ex_host_ctx ctx, const ex_partition* parts, size_t n, ex_error* err) {
  HostCall call(ctx);
  Pipeline* p = call.owner();
  if (p == nullptr) return retired_call(err, call, "partitions_assigned");
  if (std::this_thread::get_id() != p->instance_thread_.load()) return foreign_thread_call(err, call, "partitions_assigned");
  InstanceUse use(p);
  Instance* in = use.in;
  if (in == nullptr) return EX_OK;
  std::vector<ex_partition> copy(parts, parts + n);
  if (n > 0 && std::exchange(in->assigned_before, true))
    in->commit_fast_until = Clock::now() + std::chrono::milliseconds(p->spec_.commit_after_takeover_ms);
  for (auto& x : copy) {
    p->partitions_[x.id] = PartitionInfo{sv(x.name), sv(x.topic), x.number, x.start_offset};
    log::info("pipeline:" + p->spec_.name, "assigned {} (resume at offset {})", sv(x.name),
              x.start_offset);
  }
  // A stage that cannot take a partition now (a changelog it cannot read yet) is asked
  // again on a fresh assignment: the instance restarts and rejoins. Going on ("retrying")
  // had the source hand out the partition's records to a stage that never accepted it.
  auto report = [&](const Outcome& o, const Component& who) {
    const int32_t code = o.code == EX_ERR_CONFIG ? EX_ERR_CONFIG : EX_ERR_FATAL;
    // A refusal that names its key is a config error of that stage: said with the key's
    // file:line:col, as a create() error is.
    std::string msg = o.key.empty() ? fmt::format("{} refused the assignment: {}", who.id(), o.message)
                                    : who.describe_call_error("assign", o);
    if (code != EX_ERR_CONFIG) msg += " (the pipeline restarts to be assigned again)";
    in->callback_failure = Outcome{code, msg, o.key};
    if (err) {
      err->code = code;
      std::snprintf(err->message, sizeof(err->message), "%s", msg.c_str());
    }
    return code;
  };
  auto shares = in->split(copy);
  for (size_t k = 0; k < in->tasks.size(); ++k) {
    if (shares[k].empty()) continue;
    for (auto& t : in->tasks[k].transforms) {
      Outcome o = t->assign(shares[k]);
      if (!o.ok()) return report(o, *t);
    }
  }
  if (in->sink) {
    Outcome o = in->sink->assign(copy);
    if (!o.ok()) return report(o, *in->sink);
  }
  return EX_OK;
}

int32_t Pipeline::cb_revoked(ex_host_ctx ctx, const ex_partition* parts, size_t n, ex_error* err) {
  HostCall call(ctx);
  Pipeline* p = call.owner();
  if (p == nullptr) return retired_call(err, call, "partitions_revoked");
  if (std::this_thread::get_id() != p->instance_thread_.load()) return foreign_thread_call(err, call, "partitions_revoked");
  InstanceUse use(p);
  Instance* in = use.in;
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
    metrics::global().remove_gauges_matching({{"pipeline", p->spec_.name}, {"partition", sv(x.name)}});
    p->partitions_.erase(x.id);
    p->held_.forget(x.id);
    in->window.erase(x.id);  // the sink dropped its records in flight; the next owner replays them
    in->window_open.erase(x.id);
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

// The sink of the running instance, or nullptr (then the call fails as FATAL): none for a
// retired component, whose instance is gone.
Sink* Pipeline::state_sink(const HostCall& call) {
  Pipeline* p = call.owner();
  Instance* in = p != nullptr ? p->current_.load() : nullptr;
  return in != nullptr ? in->sink.get() : nullptr;
}
namespace {
const Outcome kNoSink = Outcome::make(EX_ERR_FATAL, "no sink to keep state");
}

int32_t Pipeline::cb_state_supported(ex_host_ctx ctx) {
  HostCall call(ctx);
  Sink* s = state_sink(call);
  return s != nullptr && s->has_state() ? 1 : 0;
}
int32_t Pipeline::cb_state_open(ex_host_ctx ctx, ex_bytes store, const ex_partition* part,
                                ex_state_info* info, ex_error* err) {
  HostCall call(ctx);
  Sink* s = state_sink(call);
  return state_error(err, s ? s->state_open(store, part, info) : kNoSink);
}
int32_t Pipeline::cb_state_read(ex_host_ctx ctx, ex_bytes store, const ex_partition* part, int64_t from,
                                ex_state_record_fn fn, ex_state_read_ctx fn_ctx, ex_error* err) {
  HostCall call(ctx);
  Sink* s = state_sink(call);
  return state_error(err, s ? s->state_read(store, part, from, fn, fn_ctx) : kNoSink);
}
int32_t Pipeline::cb_state_write(ex_host_ctx ctx, ex_bytes store, const ex_partition* part, ex_bytes key,
                                 ex_bytes value, ex_error* err) {
  HostCall call(ctx);
  Sink* s = state_sink(call);
  return state_error(err, s ? s->state_write(store, part, key, value) : kNoSink);
}
int64_t Pipeline::cb_state_position(ex_host_ctx ctx, ex_bytes store, const ex_partition* part) {
  HostCall call(ctx);
  Sink* s = state_sink(call);
  return s ? s->state_position(store, part) : -1;
}

int32_t Pipeline::cb_standby(ex_host_ctx ctx, const ex_partition* parts, size_t n, ex_error* err) {
  HostCall call(ctx);
  Pipeline* p = call.owner();
  if (p == nullptr) return retired_call(err, call, "standby");
  InstanceUse use(p);
  Instance* in = use.in;
  if (in == nullptr) return EX_OK;
  in->standby.replace(parts, n);
  return EX_OK;
}

int32_t Pipeline::cb_hold(ex_host_ctx ctx, const ex_partition* part, ex_error* err) {
  HostCall call(ctx);
  Pipeline* p = call.owner();
  if (p == nullptr) return retired_call(err, call, "hold");
  InstanceUse use(p);
  Instance* in = use.in;
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
            "partitions go on", HostBinding::of(ctx)->component_id, sv(part->name));
  return EX_OK;
}

void Pipeline::cb_release(ex_host_ctx ctx, const ex_partition* part) {
  HostCall call(ctx);
  Pipeline* p = call.owner();
  if (p != nullptr && part != nullptr) p->held_.release(part->id);
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
  // A paused or resumed partition starts again from its start offset.
  for (int32_t id : repositioned)
    if (auto it = partitions_.find(id); it != partitions_.end()) it->second.last_offset = kNoOffsetYet;
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

}  // namespace exactly::engine
