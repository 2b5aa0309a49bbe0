#pragma once
// One pipeline: a thread that builds the plugin instances, runs rounds with the
// commit protocol, applies the error policy, and rebuilds the instance with
// exponential backoff after a fatal error. See docs/architecture.md.
#include "config/model.hpp"
#include "engine/arena.hpp"
#include "engine/components.hpp"
#include "engine/held_partitions.hpp"
#include "engine/task_pool.hpp"
#include "metrics/registry.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace exactly::engine {

enum class State { starting, running, finished, stopped, failed };
const char* to_string(State s);

struct Stats {
  // Of committed rounds only: a record read again after an aborted round counts once.
  std::atomic<uint64_t> records_in{0};
  std::atomic<uint64_t> records_out{0};
  std::atomic<uint64_t> rejected{0};
  std::atomic<uint64_t> replayed{0};  // records of aborted rounds (read again afterwards)
  std::atomic<uint64_t> skipped{0};
  std::atomic<uint64_t> dead_lettered{0};
  std::atomic<uint64_t> commits{0};
  std::atomic<uint64_t> aborts{0};
  std::atomic<uint64_t> restarts{0};
  // Rounds aborted since the last commit, across instance rebuilds (a rebuild after
  // errors.max.consecutive.aborts does not make the pipeline healthy).
  std::atomic<uint64_t> aborts_in_a_row{0};
  // The active span, in µs since the pipeline started (-1: not yet): from the first record
  // polled to the last commit that carried records. The summary's rate is over it, so a
  // group join before the first record and an idle wait after the last do not dilute it.
  std::atomic<int64_t> first_record_us{-1};
  std::atomic<int64_t> last_commit_us{-1};
};

struct Task;  // one share of the partitions with its own transform instances
namespace pipeline_detail {
class HostCall;  // a plugin's call on the host (pipeline_instance.hpp)
}

class Pipeline {
 public:
  explicit Pipeline(config::PipelineSpec spec);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  void start();
  // Finish the running round, commit it, stop. Non-blocking; join() waits.
  void request_stop();
  void join();
  bool done() const;
  // done(), or its input has ended with every record committed and only the plugins'
  // destroy() is left: the host's natural end need not wait for it unbounded.
  bool ended() const { return done() || closing_after_end_.load(); }

  State state() const { return state_.load(); }
  std::string error() const;
  const Stats& stats() const { return stats_; }
  const config::PipelineSpec& spec() const { return spec_; }
  double elapsed_seconds() const;
  // Hot reload: new transform parameters applied in place at the next round
  // boundary. Resolves false when a plugin cannot (the caller restarts instead).
  std::future<bool> request_reconfigure(const config::PipelineSpec& next);
  // Takes back a request not yet taken up: its future then resolves false (a request
  // already applied keeps its answer). A reload that stops waiting must withdraw, or
  // the pipeline could still apply it later, after the reload restarted it.
  void withdraw_reconfigure();

 private:
  enum class RunResult { finished, stopped, failed_permanent, failed_retry };
  struct Instance;
  void run_task(Task& task, const ex_batch* batch);

  void thread_main();
  RunResult run_instance();
  // exactly_pipeline_commit_started_timestamp_seconds := now (wall clock, for /readyz)
  // while a commit (and the abort after it) runs, 0 otherwise.
  void mark_commit(bool running);
  // Returns false on a policy stop (the pipeline fails permanently).
  bool handle_reject(Instance& in, const std::string& stage, const ex_record& r,
                     const std::string& reason);
  Outcome process_batch(Instance& in, const ex_batch* batch);
  void publish_task_stats(const TaskPool::Stats& before, const TaskPool::Stats& after);
  // stage_cpu_seconds_total since the last call (pipeline_cpu.cpp). Pipeline thread only.
  void publish_stage_cpu(Instance& in);
  // `final`: the source's input ended; nothing may stay open in a sink's window.
  Outcome commit_round(Instance& in, bool final = false);
  // ABI 1.4: a sink's completion window lowers the positions a round commits.
  Outcome settle_window(Instance& in, bool final, std::string& format, std::string& data);
  void watch_open_records(Instance& in, const std::vector<ex_partition>& parts, bool draining);
  Outcome write_dead_letters(Instance& in);
  void abort_round(Instance& in, const std::string& why);
  void tick_standby(Instance& in);
  Outcome apply_holds(Instance& in, ex_batch& b, std::vector<ex_record>& kept);
  std::string origin(const ex_record& r) const;
  // "<first record origin> and N more", for reports on a stage call.
  std::string batch_origin(const ex_batch* b) const;
  // " (in process(), working on p@o and n more)" for an error of a whole call.
  std::string working_on(const ex_batch* b, const char* call) const;
  void apply_reconfigure(Instance& in);
  // Answers a pending reconfigure "not in place" at once (the pipeline cannot reach a
  // round boundary soon, e.g. waiting for a sink to finish its last records), so that
  // the reload restarts it without first waiting out its reconfigure timeout.
  void decline_reconfigure(const char* why);
  void fail(const std::string& msg);
  bool sleep_interruptible(std::chrono::milliseconds d);
  metrics::Registry::Labels labels(const std::string& stage = {}) const;

  // Host API callbacks (the plugin calls them through ex_host_api).
  static void cb_log(ex_host_ctx ctx, int32_t level, const char* msg, size_t len);
  static void cb_metric(ex_host_ctx ctx, int32_t kind, const char* name, const char* labels, double v);
  static int32_t cb_stopping(ex_host_ctx ctx);
  static int32_t cb_assigned(ex_host_ctx ctx, const ex_partition* p, size_t n, ex_error* err);
  static int32_t cb_revoked(ex_host_ctx ctx, const ex_partition* p, size_t n, ex_error* err);
  static Sink* state_sink(const pipeline_detail::HostCall& call);
  static int32_t cb_state_supported(ex_host_ctx ctx);
  static int32_t cb_state_open(ex_host_ctx ctx, ex_bytes store, const ex_partition* part,
                               ex_state_info* info, ex_error* err);
  static int32_t cb_state_read(ex_host_ctx ctx, ex_bytes store, const ex_partition* part, int64_t from,
                               ex_state_record_fn fn, ex_state_read_ctx fn_ctx, ex_error* err);
  static int32_t cb_state_write(ex_host_ctx ctx, ex_bytes store, const ex_partition* part, ex_bytes key,
                                ex_bytes value, ex_error* err);
  static int64_t cb_state_position(ex_host_ctx ctx, ex_bytes store, const ex_partition* part);
  static int32_t cb_standby(ex_host_ctx ctx, const ex_partition* p, size_t n, ex_error* err);
  static int32_t cb_hold(ex_host_ctx ctx, const ex_partition* p, ex_error* err);
  static void cb_release(ex_host_ctx ctx, const ex_partition* p);
  std::unique_ptr<HostBinding> binding(const std::string& component_id);

  config::PipelineSpec spec_;
  std::thread thread_;
  std::atomic<State> state_{State::starting};
  std::atomic<bool> stop_{false};
  std::atomic<bool> closing_after_end_{false};
  // The running instance is being torn down (a failure's restart as much as a stop): its
  // plugins' threads are told so by stopping() and give up instead of failing loudly.
  std::atomic<bool> instance_closing_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string error_;
  // The last instance ended on a record errors.policy: stop refused (the data's problem,
  // not the config's; thread_main says which). Pipeline thread only.
  bool stopped_by_policy_ = false;
  Stats stats_;
  std::chrono::steady_clock::time_point started_{};
  std::atomic<int64_t> elapsed_ms_{-1};
  // Valid while run_instance runs (callbacks use it; a stage's restore thread may read it).
  std::atomic<Instance*> current_{nullptr};
  // The callbacks that reach the instance through current_ (assigned, revoked, standby,
  // hold) are counted while they run. The teardown clears current_ and then waits for
  // them (end_instance_calls), so a call from a plugin's own thread that read current_ a
  // moment before cannot reach a stage that is being destroyed.
  std::atomic<int32_t> instance_calls_{0};
  struct InstanceUse {
    explicit InstanceUse(Pipeline* p) : p_(p) {
      // Sequentially consistent with end_instance_calls(): either this sees nullptr, or
      // the teardown sees this call and waits for it.
      p_->instance_calls_.fetch_add(1);
      in = p_->current_.load();
    }
    ~InstanceUse() { p_->instance_calls_.fetch_sub(1); }
    InstanceUse(const InstanceUse&) = delete;
    InstanceUse& operator=(const InstanceUse&) = delete;
    Instance* in = nullptr;

   private:
    Pipeline* p_;
  };
  void end_instance_calls();
  // The thread that runs the instance: partitions_assigned and partitions_revoked are
  // taken only on it (a source calls them from inside its own calls, per the ABI). From a
  // plugin's own thread they would change the pipeline's partitions under the round.
  std::atomic<std::thread::id> instance_thread_{};
  HeldPartitions held_;  // partitions stages hold back (ABI 1.2)
  // Partitions by id, with owned names for origins and re-issuing to stages.
  struct PartitionInfo {
    std::string name, topic;
    int32_t number = 0;
    int64_t start_offset = -1;
    // The offset of the partition's last record handed over since its assignment, the
    // last rewind or a repositioning (a hold): the next must be above it.
    int64_t last_offset = kNoOffsetYet;
  };
  static constexpr int64_t kNoOffsetYet = std::numeric_limits<int64_t>::min();
  void forget_last_offsets();
  std::map<int32_t, PartitionInfo> partitions_;
  std::mutex reconf_mu_;
  std::optional<config::PipelineSpec> reconf_spec_;
  std::optional<std::promise<bool>> reconf_done_;
  // An instance is in its rounds (under reconf_mu_): only then can new parameters be taken
  // in place. A pipeline waiting out its restart backoff, or still opening, has no round
  // boundary to wait for: a reload restarts it at once.
  bool in_rounds_ = false;
};

}  // namespace exactly::engine
