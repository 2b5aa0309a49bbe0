// What the pipeline's files share: one build of its plugin objects (Instance), the
// tasks its partitions are split into (threads:), and small helpers. Private to
// host/engine/pipeline*.cpp.
#pragma once

#include "engine/arena.hpp"
#include "engine/pipeline.hpp"
#include "engine/standby_set.hpp"
#include "engine/task_pool.hpp"

#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace exactly::engine {
namespace pipeline_detail {
using Clock = std::chrono::steady_clock;

inline std::string sv(ex_bytes b) {
  return b.ptr ? std::string(reinterpret_cast<const char*>(b.ptr), b.len) : std::string();
}
inline ex_bytes bv(const std::string& s) {
  return ex_bytes{reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
inline int64_t micros_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
}
// The wall clock in epoch ms, the unit of record timestamps.
inline int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
// Seconds from a record timestamp (epoch ms) to now, by the wall clock; a timestamp
// ahead of this host's clock (another host's skew) counts as 0.
inline double age_seconds(int64_t timestamp_ms) {
  const int64_t now_ms = wall_ms();
  return now_ms > timestamp_ms ? static_cast<double>(now_ms - timestamp_ms) / 1000.0 : 0.0;
}
// A plugin's call on the host, counted while it runs (HostBinding::retire waits for it).
// owner() is nullptr once the component is retired: the call must then touch nothing of
// the pipeline, whose next instance (or the pipeline itself) may be all that is left.
class HostCall {
 public:
  explicit HostCall(ex_host_ctx ctx) : b_(HostBinding::of(ctx)), live_(b_->enter()) {}
  ~HostCall() { b_->leave(); }
  HostCall(const HostCall&) = delete;
  HostCall& operator=(const HostCall&) = delete;
  Pipeline* owner() const { return live_ ? static_cast<Pipeline*>(b_->owner) : nullptr; }
  HostBinding& binding() const { return *b_; }

 private:
  HostBinding* b_;
  bool live_;
};
}  // namespace pipeline_detail
using namespace pipeline_detail;

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
  // The round's oldest record timestamp (epoch ms; INT64_MAX: none known): its age when
  // the round commits is the round's worst end-to-end latency so far.
  int64_t round_oldest_ms = std::numeric_limits<int64_t>::max();
  // The newest record timestamp of the last batch with any (epoch ms; INT64_MIN: none yet):
  // how far behind its input the pipeline reads (backlog_age(), round_cadence.hpp).
  int64_t batch_newest_ms = std::numeric_limits<int64_t>::min();
  uint64_t round_out = 0, round_rejected = 0;  // folded into the stats when it commits
  // Records a sink's completion window failed after an earlier round counted them out
  // (pipeline_window.cpp): taken off records_out when this round commits.
  uint64_t round_late_rejected = 0;
  // Per partition id: the source position after the last record read this round.
  std::map<int32_t, int64_t> round_positions;
  // ABI 1.4: partitions whose committed position is behind the scan position because the
  // sink still has records of them in flight, with that scan position.
  std::map<int32_t, int64_t> window;
  // Per partition behind in the window: its lowest open record, since when it is the
  // lowest, and when that was last said (pipeline_window.cpp: a record that never
  // completes would otherwise hold the partition, or the end of its input, in silence).
  struct OpenRecord {
    int64_t offset = -1;
    Clock::time_point since{}, said{};
  };
  std::map<int32_t, OpenRecord> window_open;
  int64_t consecutive_aborts = 0;
  Clock::time_point round_start = Clock::now();
  Clock::duration last_commit{};  // how long the last round's commit took (round_cadence.hpp)
  Clock::duration typical_commit{};  // moving average of commit times (round_cadence.hpp)
  // For commit.after.takeover after partitions are assigned (not the instance's first
  // assignment) or resumed, a round ends after each batch: a takeover's first output is
  // visible without waiting out commit.interval.
  Clock::time_point commit_fast_until{};
  bool assigned_before = false;

  // The pipeline thread's CPU clock and its plugin calls' share at the instance's start,
  // then at each publish_stage_cpu.
  int64_t cpu_mark_ns = 0, plugin_cpu_mark_ns = 0;

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

}  // namespace exactly::engine
