// stage_cpu_seconds_total: the CPU each stage's calls took, and the pipeline thread's own
// share outside them, published once a round (stage_cpu.hpp counts it).
#include "engine/pipeline_instance.hpp"
#include "engine/stage_cpu.hpp"

#include <utility>
#include <vector>

namespace exactly::engine {

void Pipeline::publish_stage_cpu(Instance& in) {
  std::vector<std::pair<const char*, int64_t>> calls;
  auto publish = [&](Component* c) {
    if (c == nullptr) return;
    calls.clear();
    c->drain_cpu(calls);
    for (auto& [fn, ns] : calls) {
      auto l = labels(c->id());
      l.emplace_back("call", fn);
      metrics::global().add("stage_cpu_seconds_total", l, static_cast<double>(ns) / 1e9);
    }
  };
  publish(in.source.get());
  for (auto& task : in.tasks)
    for (auto& t : task.transforms) publish(t.get());
  publish(in.sink.get());
  publish(in.dlq.get());

  // On the pipeline thread: its CPU since the last publish, less what its plugin calls
  // took, is the host's own work (splitting batches, copying records, bookkeeping).
  const int64_t now = thread_cpu_ns(), plugin = thread_plugin_cpu_ns();
  const int64_t host = (now - in.cpu_mark_ns) - (plugin - in.plugin_cpu_mark_ns);
  if (host > 0) {
    auto l = labels("host");
    l.emplace_back("call", "pipeline_thread");
    metrics::global().add("stage_cpu_seconds_total", l, static_cast<double>(host) / 1e9);
  }
  in.cpu_mark_ns = now;
  in.plugin_cpu_mark_ns = plugin;
}

}  // namespace exactly::engine
