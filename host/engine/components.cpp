#include "engine/components.hpp"

#include "engine/plugin_call.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace exactly::engine {

ex_error new_error() {
  ex_error e{};
  e.struct_size = sizeof(e);
  return e;
}

// Bounded reads: a plugin that forgot the NUL must not make the host read past the array.
Outcome Outcome::from(int32_t rc, const ex_error& e) {
  if (rc == EX_OK) return {};
  Outcome o{rc, std::string(e.message, strnlen(e.message, sizeof(e.message))),
            std::string(e.key, strnlen(e.key, sizeof(e.key)))};
  if (o.message.empty()) o.message = fmt::format("error code {}", rc);
  return o;
}

AbiConfig::AbiConfig(const config::ComponentSpec& spec) {
  for (auto& [k, v] : spec.values)
    entries_.push_back({{reinterpret_cast<const uint8_t*>(k.data()), k.size()},
                        {reinterpret_cast<const uint8_t*>(v.data()), v.size()}});
  cfg_ = ex_config{sizeof(ex_config), entries_.data(), entries_.size()};
}

Component::Component(const config::ComponentSpec& spec, std::unique_ptr<HostBinding> binding)
    : spec_(spec), library_(spec.library), binding_(std::move(binding)) {
  crash_label_ = fmt::format("pipeline '{}', stage '{}' ({})", binding_->pipeline,
                             binding_->component_id, library_ ? library_->path : std::string("?"));
  site_ = CallSite{&binding_->pipeline, &binding_->component_id, &crash_label_, &cpu_};
  binding_->library_path = library_ ? library_->path : std::string("?");
  if (library_) binding_->library_late_calls = library_->late_calls;
}

Component::~Component() {
  if (!binding_) return;
  binding_->retire();
  if (library_) library_->keep_until_unloaded(std::shared_ptr<HostBinding>(std::move(binding_)));
}

void HostBinding::retire() {
  retired.store(true);
  // Bounded: a leaked thread stuck inside a host call must not hang a reload or a stop.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (calls.load() != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

std::string Component::describe_create_error(const Outcome& o) const {
  config::Mark m = o.key.empty() ? spec_.mark : spec_.mark_of(o.key);
  std::string key = o.key.empty() ? "" : fmt::format(" key '{}':", o.key);
  return fmt::format("{}: error: {} ({}):{} {}", m.str(), spec_.where, spec_.plugin, key,
                     o.message);
}

std::string Component::describe_call_error(const char* call, const Outcome& o) const {
  if (o.key.empty()) return fmt::format("{} {}: {}", spec_.where, call, o.message);
  return fmt::format("{}: error: {} ({}) {}: key '{}': {}", spec_.mark_of(o.key).str(), spec_.where,
                     spec_.plugin, call, o.key, o.message);
}

Outcome Component::call_failure(const char* call, const Outcome& o) const {
  return Outcome{o.code, o.key.empty() ? id() + " " + call + ": " + o.message : describe_call_error(call, o), o.key};
}

#define CALL(fn, ...)                                       \
  do {                                                      \
    if (vt().fn == nullptr) return Outcome{};               \
    InPluginCall in_call(site_, #fn);        \
    ex_error e = new_error();                               \
    return Outcome::from(vt().fn(self_, ##__VA_ARGS__, &e), e); \
  } while (0)

#define CALL_REQUIRED(fn, ...)                                                            \
  do {                                                                                    \
    if (vt().fn == nullptr)                                                               \
      return Outcome::make(EX_ERR_FATAL, fmt::format("{} does not implement " #fn, id())); \
    InPluginCall in_call(site_, #fn);                                      \
    ex_error e = new_error();                                                             \
    return Outcome::from(vt().fn(self_, ##__VA_ARGS__, &e), e);                           \
  } while (0)

template <typename VT, typename Handle>
Outcome create_with(const VT& vt, const config::ComponentSpec& spec, HostBinding* b,
                    Handle* self, const CallSite& site) {
  InPluginCall in_call(site, "create");
  AbiConfig cfg(spec);
  ex_error e = new_error();
  int32_t rc = vt.create(&b->api, cfg.get(), self, &e);
  if (rc != EX_OK) *self = nullptr;
  return Outcome::from(rc, e);
}

// The new spec replaces the old one only when the plugin took it.
template <typename VT, typename Handle>
Outcome reconfigure_with(const VT& vt, const config::ComponentSpec& spec, Handle self,
                         config::ComponentSpec* current, const CallSite& site) {
  if (vt.reconfigure == nullptr) return Outcome::make(EX_ERR_UNSUPPORTED, "no reconfigure");
  InPluginCall in_call(site, "reconfigure");
  AbiConfig cfg(spec);
  ex_error e = new_error();
  Outcome o = Outcome::from(vt.reconfigure(self, cfg.get(), &e), e);
  if (o.ok()) *current = spec;
  return o;
}

Source::~Source() {
  InPluginCall in_call(site_, "destroy");
  if (self_) vt().destroy(self_);
}
Outcome Source::create() { return create_with(vt(), spec_, binding_.get(), &self_, site_); }
Outcome Source::open(const ex_checkpoint* resume) { CALL_REQUIRED(open, resume); }
Outcome Source::poll(int32_t timeout_ms, ex_batch* out, bool* eoi) {
  int32_t end = 0;
  ex_error e = new_error();
  *out = ex_batch{sizeof(ex_batch), sizeof(ex_record), nullptr, 0};
  if (vt().poll == nullptr) return Outcome::make(EX_ERR_FATAL, "source has no poll");
  InPluginCall in_call(site_, "poll");
  int32_t rc = vt().poll(self_, timeout_ms, out, &end, &e);
  *eoi = end != 0;
  if (rc != EX_OK) return Outcome::from(rc, e);
  if (out->count > 0 && out->records == nullptr)
    return Outcome::make(EX_ERR_FATAL, fmt::format("poll() returned {} record(s) and no records (a null "
                                                   "array): the plugin's bug", out->count));
  if (out->record_size < sizeof(ex_record) && out->count > 0)
    return Outcome::make(EX_ERR_FATAL, "source returned records smaller than ex_record");
  return Outcome::from(rc, e);
}
Outcome Source::checkpoint(ex_checkpoint* out) {
  *out = ex_checkpoint{sizeof(ex_checkpoint), {nullptr, 0}, {nullptr, 0}};
  CALL_REQUIRED(checkpoint, out);
}
Outcome Source::commit(const ex_checkpoint* cp) { CALL(commit, cp); }
Outcome Source::rewind(const ex_checkpoint* cp) { CALL_REQUIRED(rewind, cp); }
Outcome Source::pause_partitions(const std::vector<ex_partition>& p, bool paused) {
  CALL_REQUIRED(pause_partitions, p.data(), p.size(), paused ? 1 : 0);
}
Outcome Source::checkpoint_at(const std::vector<ex_partition>& p, ex_checkpoint* out) {
  *out = ex_checkpoint{sizeof(ex_checkpoint), {nullptr, 0}, {nullptr, 0}};
  CALL_REQUIRED(checkpoint_at, p.data(), p.size(), out);
}
Outcome Source::reconfigure(const config::ComponentSpec& spec) {
  return reconfigure_with(vt(), spec, self_, &spec_, site_);
}

Transform::~Transform() {
  InPluginCall in_call(site_, "destroy");
  if (self_) vt().destroy(self_);
}
Outcome Transform::create() { return create_with(vt(), spec_, binding_.get(), &self_, site_); }
Outcome Transform::assign(const std::vector<ex_partition>& p) { CALL(assign, p.data(), p.size()); }
Outcome Transform::revoke(const std::vector<ex_partition>& p) { CALL(revoke, p.data(), p.size()); }
Outcome Transform::process(const ex_batch* in, const ex_emitter* out) {
  CALL_REQUIRED(process, in, out);
}
Outcome Transform::prepare_commit() { CALL(prepare_commit); }
Outcome Transform::commit() { CALL(commit); }
Outcome Transform::abort() { CALL(abort); }
Outcome Transform::reconfigure(const config::ComponentSpec& spec) {
  return reconfigure_with(vt(), spec, self_, &spec_, site_);
}
Outcome Transform::positions(const std::vector<ex_partition>& p) {
  CALL(positions, p.data(), p.size());
}
Outcome Transform::standby(const std::vector<ex_partition>& p) {
  CALL(standby, p.data(), p.size());
}

Sink::~Sink() {
  InPluginCall in_call(site_, "destroy");
  if (self_) vt().destroy(self_);
}
Outcome Sink::create() { return create_with(vt(), spec_, binding_.get(), &self_, site_); }
Outcome Sink::open(ex_checkpoint* stored, bool* has_stored) {
  int32_t has = 0;
  *stored = ex_checkpoint{sizeof(ex_checkpoint), {nullptr, 0}, {nullptr, 0}};
  ex_error e = new_error();
  if (vt().open == nullptr) {
    *has_stored = false;
    return {};
  }
  InPluginCall in_call(site_, "open");
  int32_t rc = vt().open(self_, stored, &has, &e);
  *has_stored = has != 0;
  return Outcome::from(rc, e);
}
Outcome Sink::assign(const std::vector<ex_partition>& p) { CALL(assign, p.data(), p.size()); }
Outcome Sink::revoke(const std::vector<ex_partition>& p) { CALL(revoke, p.data(), p.size()); }
Outcome Sink::write(const ex_batch* in, const ex_record_errors* errors) {
  CALL_REQUIRED(write, in, errors);
}
Outcome Sink::prepare_commit() { CALL(prepare_commit); }
Outcome Sink::commit(const ex_checkpoint* positions, uint32_t* flags) {
  *flags = 0;
  CALL_REQUIRED(commit, positions, flags);
}
Outcome Sink::abort() { CALL(abort); }
Outcome Sink::completed(std::vector<ex_partition>& p, const ex_record_errors* errors) {
  CALL_REQUIRED(completed, p.data(), p.size(), errors);
}
bool Sink::has_state() const {
  return vt().state_open && vt().state_read && vt().state_write && vt().state_position;
}
Outcome Sink::state_open(ex_bytes store, const ex_partition* part, ex_state_info* info) {
  if (!has_state()) return Outcome::make(EX_ERR_UNSUPPORTED, id() + " keeps no state changelogs");
  CALL(state_open, store, part, info);
}
Outcome Sink::state_read(ex_bytes store, const ex_partition* part, int64_t from,
                         ex_state_record_fn fn, ex_state_read_ctx fn_ctx) {
  if (!has_state()) return Outcome::make(EX_ERR_UNSUPPORTED, id() + " keeps no state changelogs");
  CALL(state_read, store, part, from, fn, fn_ctx);
}
Outcome Sink::state_write(ex_bytes store, const ex_partition* part, ex_bytes key, ex_bytes value) {
  if (!has_state()) return Outcome::make(EX_ERR_UNSUPPORTED, id() + " keeps no state changelogs");
  CALL(state_write, store, part, key, value);
}
int64_t Sink::state_position(ex_bytes store, const ex_partition* part) {
  if (!has_state()) return -1;
  InPluginCall in_call(site_, "state_position");
  return vt().state_position(self_, store, part);
}
Outcome Sink::reconfigure(const config::ComponentSpec& spec) {
  return reconfigure_with(vt(), spec, self_, &spec_, site_);
}

}  // namespace exactly::engine
