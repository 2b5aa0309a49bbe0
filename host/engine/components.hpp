#pragma once
// Live plugin objects. Each holds a shared_ptr to its library, so the .so stays
// mapped until the object is destroyed (Boost.DLL's first rule), and owns the
// ex_host_api it handed to the plugin (the plugin may keep that pointer).
#include <exactly/plugin_abi.h>

#include "config/model.hpp"
#include "engine/plugin_call.hpp"
#include "plugin/loader.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace exactly::engine {

// Result of a call across the ABI.
struct Outcome {
  int32_t code = EX_OK;
  std::string message;
  std::string key;
  bool ok() const { return code == EX_OK; }
  static Outcome from(int32_t rc, const ex_error& e);
  static Outcome make(int32_t code, std::string msg) { return Outcome{code, std::move(msg), {}}; }
};

ex_error new_error();

// The config as the plugin sees it: entries pointing into the spec's strings.
class AbiConfig {
 public:
  explicit AbiConfig(const config::ComponentSpec& spec);
  const ex_config* get() const { return &cfg_; }

 private:
  std::vector<ex_config_entry> entries_;
  ex_config cfg_{};
};

// What a plugin's ex_host_api points at. It outlives the component: a thread the plugin
// did not stop in destroy() may still call the host through it (it breaks the ABI's
// lifetime rule, but must not crash the host or reach the pipeline's next instance), so a
// retired binding is kept by its library (plugin::Library::keep_until_unloaded) and
// answers such calls without touching the pipeline.
struct HostBinding {
  ex_host_api api{};
  void* owner = nullptr;  // the Pipeline; api.ctx points at this binding
  std::string pipeline;
  std::string component_id;
  std::string library_path;
  std::shared_ptr<std::atomic<bool>> library_late_calls;  // plugin::Library::late_calls
  std::atomic<bool> retired{false};
  std::atomic<int32_t> calls{0};       // host calls running on this binding
  std::atomic<int64_t> late_lines{0};  // log lines after retirement
  ex_host_ctx ctx() { return reinterpret_cast<ex_host_ctx>(this); }
  static HostBinding* of(ex_host_ctx ctx) { return reinterpret_cast<HostBinding*>(ctx); }
  // Sequentially consistent on both sides: either a call sees `retired`, or retire()
  // sees the call and waits for it to leave.
  bool enter() {
    calls.fetch_add(1);
    if (!retired.load()) return true;
    if (library_late_calls) library_late_calls->store(true);
    return false;
  }
  void leave() { calls.fetch_sub(1); }
  // After the plugin's destroy(): later calls get a refusal; calls already running (a
  // leaked thread inside a metric call, say) are waited for, up to a bound.
  void retire();
};

class Component {
 public:
  Component(const config::ComponentSpec& spec, std::unique_ptr<HostBinding> binding);
  // Runs after the derived destructors called the plugin's destroy(): retires the binding.
  virtual ~Component();
  Component(const Component&) = delete;
  Component& operator=(const Component&) = delete;
  const config::ComponentSpec& spec() const { return spec_; }
  // The plugin ABI minor its library was built for (what it promises).
  uint32_t abi_minor() const { return library_ ? (library_->abi_version & 0xffffu) : 0; }
  const std::string& id() const { return binding_->component_id; }
  // A create() failure rendered with the file:line:col of the offending key.
  std::string describe_create_error(const Outcome& o) const;
  // A failed call after create (open, ...): "<where> <call>: <message>", or, when the
  // plugin named a config key, led by that key's file:line:col like a create error.
  std::string describe_call_error(const char* call, const Outcome& o) const;
  // A failed call as the pipeline reports it: "<id> <call>: <message>" (id: source/kafka,
  // errors.dead-letter/file, ...), or describe_call_error's text when the plugin named a
  // config key (a problem found only now, such as a Redis server without the durability
  // asked for). The code and key are kept.
  Outcome call_failure(const char* call, const Outcome& o) const;
  // The CPU its calls took since the last drain, by call (stage_cpu.hpp).
  void drain_cpu(std::vector<std::pair<const char*, int64_t>>& out) { cpu_.drain(out); }

 protected:
  config::ComponentSpec spec_;
  // Destroyed after the derived destructors have destroyed the plugin's object.
  std::shared_ptr<plugin::Library> library_;
  std::unique_ptr<HostBinding> binding_;
  // "pipeline 'p', stage 'transforms[0]/dedupe' (/path/lib.so)": what a fatal
  // signal during one of this component's calls reports (fatal_signal.hpp).
  std::string crash_label_;
  CallSite site_;  // for plugin_call.hpp: pipeline, stage and label of every call
  StageCpu cpu_;   // CPU of this component's calls (stage_cpu_seconds_total)
};

class Source : public Component {
 public:
  using Component::Component;
  ~Source() override;
  Outcome create();
  Outcome open(const ex_checkpoint* resume);
  Outcome poll(int32_t timeout_ms, ex_batch* out, bool* eoi);
  Outcome checkpoint(ex_checkpoint* out);
  Outcome commit(const ex_checkpoint* cp);
  Outcome rewind(const ex_checkpoint* cp);
  Outcome reconfigure(const config::ComponentSpec& spec);
  bool can_pause_partitions() const { return vt().pause_partitions != nullptr; }
  Outcome pause_partitions(const std::vector<ex_partition>& p, bool paused);
  // ABI 1.4: the checkpoint with `p` at their start_offset (a sink's completion cursor).
  bool has_checkpoint_at() const { return vt().checkpoint_at != nullptr; }
  Outcome checkpoint_at(const std::vector<ex_partition>& p, ex_checkpoint* out);

 private:
  const ex_source_vtable& vt() const { return spec_.component->source; }
  ex_source_self self_ = nullptr;  // the plugin's object, made by create()
};

class Transform : public Component {
 public:
  using Component::Component;
  ~Transform() override;
  Outcome create();
  Outcome assign(const std::vector<ex_partition>& p);
  Outcome revoke(const std::vector<ex_partition>& p);
  Outcome process(const ex_batch* in, const ex_emitter* out);
  Outcome prepare_commit();
  Outcome commit();
  Outcome abort();
  Outcome reconfigure(const config::ComponentSpec& spec);
  Outcome positions(const std::vector<ex_partition>& p);
  bool has_standby() const { return vt().standby != nullptr; }
  Outcome standby(const std::vector<ex_partition>& p);

 private:
  const ex_transform_vtable& vt() const { return spec_.component->transform; }
  ex_transform_self self_ = nullptr;  // the plugin's object, made by create()
};

class Sink : public Component {
 public:
  using Component::Component;
  ~Sink() override;
  Outcome create();
  Outcome open(ex_checkpoint* stored, bool* has_stored);
  Outcome assign(const std::vector<ex_partition>& p);
  Outcome revoke(const std::vector<ex_partition>& p);
  Outcome write(const ex_batch* in, const ex_record_errors* errors);
  Outcome prepare_commit();
  Outcome commit(const ex_checkpoint* positions, uint32_t* flags);
  Outcome abort();
  Outcome reconfigure(const config::ComponentSpec& spec);
  // State changelogs (ABI 1.1); a sink built for 1.0 has none.
  bool has_state() const;
  Outcome state_open(ex_bytes store, const ex_partition* part, ex_state_info* info);
  Outcome state_read(ex_bytes store, const ex_partition* part, int64_t from, ex_state_record_fn fn,
                     ex_state_read_ctx fn_ctx);
  Outcome state_write(ex_bytes store, const ex_partition* part, ex_bytes key, ex_bytes value);
  int64_t state_position(ex_bytes store, const ex_partition* part);
  // ABI 1.4: an ordered completion window (records still in flight after write returns).
  bool has_completed() const { return vt().completed != nullptr; }
  Outcome completed(std::vector<ex_partition>& p, const ex_record_errors* errors);

 private:
  const ex_sink_vtable& vt() const { return spec_.component->sink; }
  ex_sink_self self_ = nullptr;  // the plugin's object, made by create()
};

}  // namespace exactly::engine
