// exactly C++ plugin SDK — header-only, compiled into the plugin.
//
// Plugin authors derive from Source, Transform or Sink, declare a config schema as a
// static array of ex_config_field, and export everything with EXACTLY_PLUGIN. This file
// is the API they use; the adapters that translate the C ABI (plugin_abi.h) into virtual
// calls and catch every exception at the boundary (nothing C++ ever reaches the host)
// are in exactly/detail/, included below.
#pragma once
#define EXACTLY_SDK_HPP

#include <exactly/plugin_abi.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstddef>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace exactly::sdk {

// ---------------------------------------------------------------- Status

class Status {
 public:
  Status() = default;
  static Status ok() { return {}; }
  static Status error(ex_status code, std::string message, std::string key = {}) {
    Status s;
    s.code_ = code;
    s.message_ = std::move(message);
    s.key_ = std::move(key);
    return s;
  }
  static Status retriable(std::string m) { return error(EX_ERR_RETRIABLE, std::move(m)); }
  static Status abortable(std::string m) { return error(EX_ERR_ABORTABLE, std::move(m)); }
  static Status fatal(std::string m) { return error(EX_ERR_FATAL, std::move(m)); }
  static Status config(std::string key, std::string m) {
    return error(EX_ERR_CONFIG, std::move(m), std::move(key));
  }
  static Status unsupported(std::string m = "not supported") {
    return error(EX_ERR_UNSUPPORTED, std::move(m));
  }
  bool is_ok() const { return code_ == EX_OK; }
  explicit operator bool() const { return is_ok(); }
  ex_status code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& key() const { return key_; }

 private:
  ex_status code_ = EX_OK;
  std::string message_;
  std::string key_;
};

// Thrown by Config accessors and by authors for invalid settings; becomes EX_ERR_CONFIG
// with the key, so the host can point at the key's file:line:col.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string key, const std::string& msg)
      : std::runtime_error(msg), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// Thrown by authors for any other failure; becomes the given status class.
class StatusError : public std::runtime_error {
 public:
  explicit StatusError(Status s) : std::runtime_error(s.message()), status_(std::move(s)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};


// ---------------------------------------------------------------- bytes & records

inline std::string_view view(ex_bytes b) {
  return b.ptr == nullptr ? std::string_view{}
                          : std::string_view(reinterpret_cast<const char*>(b.ptr), b.len);
}
inline ex_bytes bytes(std::string_view s) {
  return ex_bytes{reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
inline ex_bytes null_bytes() { return ex_bytes{nullptr, 0}; }

// Header value by name, or nullopt.
inline std::optional<std::string_view> header(const ex_record& r, std::string_view name) {
  for (uint32_t i = 0; i < r.header_count; ++i)
    if (view(r.headers[i].key) == name) return view(r.headers[i].value);
  return std::nullopt;
}

// A read-only batch that honours the producer's record stride.
class Batch {
 public:
  explicit Batch(const ex_batch* b) : b_(b) {}
  size_t size() const { return b_->count; }
  bool empty() const { return b_->count == 0; }
  const ex_record& operator[](size_t i) const {
    return *reinterpret_cast<const ex_record*>(reinterpret_cast<const char*>(b_->records) +
                                               i * b_->record_size);
  }

 private:
  const ex_batch* b_;
};

// ---------------------------------------------------------------- config

class Config {
 public:
  Config() = default;
  explicit Config(const ex_config* c) {
    if (c == nullptr) return;
    for (size_t i = 0; i < c->count; ++i)
      values_[std::string(view(c->entries[i].key))].emplace_back(view(c->entries[i].value));
  }
  // For tests and the harness: build from pairs.
  explicit Config(const std::vector<std::pair<std::string, std::string>>& kv) {
    for (auto& [k, v] : kv) values_[k].push_back(v);
  }

  bool has(const std::string& key) const { return values_.count(key) != 0; }

  std::string get_string(const std::string& key, const std::string& dflt = {}) const {
    auto it = values_.find(key);
    return it == values_.end() || it->second.empty() ? dflt : it->second.front();
  }
  std::string require_string(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end() || it->second.empty()) throw ConfigError(key, "is required");
    return it->second.front();
  }
  int64_t get_int(const std::string& key, int64_t dflt = 0) const {
    if (!has(key)) return dflt;
    return parse_int(key, get_string(key));
  }
  double get_double(const std::string& key, double dflt = 0) const {
    if (!has(key)) return dflt;
    std::string s = get_string(key);
    char* end = nullptr;
    errno = 0;
    double d = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !std::isfinite(d) || errno == ERANGE)
      throw ConfigError(key, "expected a number, got '" + s + "'");
    return d;
  }
  bool get_bool(const std::string& key, bool dflt = false) const {
    if (!has(key)) return dflt;
    std::string s = get_string(key);
    if (s == "true") return true;
    if (s == "false") return false;
    throw ConfigError(key, "expected true or false, got '" + s + "'");
  }
  // Durations and sizes arrive normalised by the host (ms / bytes).
  int64_t get_duration_ms(const std::string& key, int64_t dflt = 0) const {
    return get_int(key, dflt);
  }
  int64_t get_size(const std::string& key, int64_t dflt = 0) const { return get_int(key, dflt); }
  std::vector<std::string> get_list(const std::string& key) const {
    auto it = values_.find(key);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
  }
  // Entries "<prefix>.<sub>" as {sub: value} (pass-through maps such as librdkafka's).
  std::map<std::string, std::string> get_map(const std::string& prefix) const {
    std::map<std::string, std::string> out;
    std::string p = prefix + ".";
    for (auto& [k, v] : values_)
      if (k.compare(0, p.size(), p) == 0 && !v.empty()) out[k.substr(p.size())] = v.front();
    return out;
  }
  const std::map<std::string, std::vector<std::string>>& all() const { return values_; }

  static int64_t parse_int(const std::string& key, const std::string& s) {
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0') throw ConfigError(key, "expected an integer, got '" + s + "'");
    return v;
  }

 private:
  std::map<std::string, std::vector<std::string>> values_;
};

// ---------------------------------------------------------------- host services

struct Partition {
  int32_t id = 0;
  std::string name;
  std::string topic;
  int32_t number = 0;
  int64_t start_offset = -1;

  static Partition from(const ex_partition& p) {
    return Partition{p.id, std::string(view(p.name)), std::string(view(p.topic)), p.number,
                     p.start_offset};
  }
  ex_partition to_abi() const {
    return ex_partition{sizeof(ex_partition), id, bytes(name), bytes(topic), number,
                        start_offset};
  }
};

inline std::vector<Partition> partitions_from(const ex_partition* p, size_t n) {
  std::vector<Partition> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(Partition::from(p[i]));
  return out;
}

struct Checkpoint {
  std::string format;
  std::string data;
  static Checkpoint from(const ex_checkpoint* c) {
    return c == nullptr ? Checkpoint{}
                        : Checkpoint{std::string(view(c->format)), std::string(view(c->data))};
  }
};

// State changelogs (ABI 1.1): see ex_state_info in plugin_abi.h.
struct StateInfo {
  int64_t start = 0;
  int64_t end = 0;
  bool created = false;
};
// One record read back; value.ptr == nullptr is a tombstone. Return false to stop.
using StateRecordFn = std::function<bool(int64_t position, ex_bytes key, ex_bytes value)>;


class Host {
 public:
  Host() = default;
  explicit Host(const ex_host_api* api) : api_(api) {}
  const char* pipeline() const { return api_ && api_->pipeline_name ? api_->pipeline_name : ""; }
  const char* component_id() const {
    return api_ && api_->component_id ? api_->component_id : "";
  }
  void log(ex_log_level level, std::string_view msg) const {
    if (api_ && api_->log) api_->log(api_->ctx, level, msg.data(), msg.size());
  }
  void info(std::string_view m) const { log(EX_LOG_INFO, m); }
  void warn(std::string_view m) const { log(EX_LOG_WARN, m); }
  void error(std::string_view m) const { log(EX_LOG_ERROR, m); }
  void counter(const char* name, double v, const char* labels = "") const {
    if (api_ && api_->metric) api_->metric(api_->ctx, EX_METRIC_COUNTER, name, labels, v);
  }
  void gauge(const char* name, double v, const char* labels = "") const {
    if (api_ && api_->metric) api_->metric(api_->ctx, EX_METRIC_GAUGE, name, labels, v);
  }
  // Sources: report partition changes (from inside poll).
  Status assigned(const std::vector<Partition>& parts) const {
    return notify(parts, api_ ? api_->partitions_assigned : nullptr);
  }
  Status revoked(const std::vector<Partition>& parts) const {
    return notify(parts, api_ ? api_->partitions_revoked : nullptr);
  }
  // Stages (ABI 1.2): hold back one partition while its state is being prepared (from
  // inside assign()); unsupported on an older host or a source that cannot pause one
  // partition: then prepare it before assign() returns. release() may be called from
  // any thread once ready.
  Status hold(const Partition& part) const {
    if (api_ == nullptr || api_->struct_size < offsetof(ex_host_api, release) + sizeof(api_->release) ||
        api_->hold == nullptr)
      return Status::unsupported("the host cannot hold a partition");
    ex_partition p = part.to_abi();
    ex_error err{};
    err.struct_size = sizeof(err);
    int32_t rc = api_->hold(api_->ctx, &p, &err);
    return rc == EX_OK ? Status::ok() : Status::error(static_cast<ex_status>(rc), err.message);
  }
  void release(const Partition& part) const {
    if (api_ == nullptr || api_->struct_size < offsetof(ex_host_api, release) + sizeof(api_->release) ||
        api_->release == nullptr)
      return;
    ex_partition p = part.to_abi();
    api_->release(api_->ctx, &p);
  }
  // ABI 1.5: true once the host has been asked to stop this instance. A call that may
  // wait long (open() waiting for a cluster) polls it and gives up with any error; the
  // host, stopping, does not count that as a failure. Always false on an older host.
  bool stopping() const {
    return api_ != nullptr &&
           api_->struct_size >= offsetof(ex_host_api, stopping) + sizeof(api_->stopping) &&
           api_->stopping != nullptr && api_->stopping(api_->ctx) != 0;
  }
  // Sources (ABI 1.2): the partitions this instance should keep warm copies of without
  // owning them; replaces the previous set. A no-op on an older host.
  Status standby(const std::vector<Partition>& parts) const {
    bool has = api_ != nullptr &&
               api_->struct_size >= offsetof(ex_host_api, standby) + sizeof(api_->standby);
    return notify(parts, has ? api_->standby : nullptr);
  }

  // State changelogs (ABI 1.1; false / unsupported on an older host or a sink without).
  bool state_supported() const {
    return has_state() && api_->state_supported && api_->state_supported(api_->ctx) != 0;
  }
  Status state_open(std::string_view store, const Partition& part, StateInfo& info) const {
    if (!has_state() || api_->state_open == nullptr) return Status::unsupported("no state changelogs");
    ex_partition p = part.to_abi();
    ex_state_info i{};
    i.struct_size = sizeof(i);
    ex_error err{};
    err.struct_size = sizeof(err);
    int32_t rc = api_->state_open(api_->ctx, bytes(store), &p, &i, &err);
    if (rc != EX_OK) return Status::error(static_cast<ex_status>(rc), err.message, err.key);
    info = StateInfo{i.start, i.end, i.created != 0};
    return Status::ok();
  }
  Status state_read(std::string_view store, const Partition& part, int64_t from,
                    const StateRecordFn& fn) const {
    if (!has_state() || api_->state_read == nullptr) return Status::unsupported("no state changelogs");
    ex_partition p = part.to_abi();
    ex_error err{};
    err.struct_size = sizeof(err);
    int32_t rc = api_->state_read(api_->ctx, bytes(store), &p, from,
                                  &state_record_trampoline,
                                  reinterpret_cast<ex_state_read_ctx>(const_cast<StateRecordFn*>(&fn)),
                                  &err);
    return rc == EX_OK ? Status::ok() : Status::error(static_cast<ex_status>(rc), err.message, err.key);
  }
  Status state_write(std::string_view store, const Partition& part, ex_bytes key,
                     ex_bytes value) const {
    if (!has_state() || api_->state_write == nullptr) return Status::unsupported("no state changelogs");
    ex_partition p = part.to_abi();
    ex_error err{};
    err.struct_size = sizeof(err);
    int32_t rc = api_->state_write(api_->ctx, bytes(store), &p, key, value, &err);
    return rc == EX_OK ? Status::ok() : Status::error(static_cast<ex_status>(rc), err.message, err.key);
  }
  int64_t state_position(std::string_view store, const Partition& part) const {
    if (!has_state() || api_->state_position == nullptr) return -1;
    ex_partition p = part.to_abi();
    return api_->state_position(api_->ctx, bytes(store), &p);
  }

 private:
  // The C callback handed to state_read: calls the StateRecordFn behind fn_ctx.
  static int32_t state_record_trampoline(ex_state_read_ctx ctx, int64_t pos, ex_bytes key,
                                         ex_bytes value) {
    try {
      return (*reinterpret_cast<const StateRecordFn*>(ctx))(pos, key, value) ? 0 : 1;
    } catch (...) {
      return 1;
    }
  }
  bool has_state() const {
    return api_ != nullptr &&
           api_->struct_size >= offsetof(ex_host_api, state_position) + sizeof(api_->state_position);
  }
  using Fn = int32_t (*)(ex_host_ctx, const ex_partition*, size_t, ex_error*);
  Status notify(const std::vector<Partition>& parts, Fn fn) const {
    if (fn == nullptr) return Status::ok();
    std::vector<ex_partition> abi;
    abi.reserve(parts.size());
    for (auto& p : parts) abi.push_back(p.to_abi());
    ex_error err{};
    err.struct_size = sizeof(err);
    int32_t rc = fn(api_->ctx, abi.data(), abi.size(), &err);
    return rc == EX_OK ? Status::ok() : Status::error(static_cast<ex_status>(rc), err.message);
  }
  const ex_host_api* api_ = nullptr;
};

class Emitter {
 public:
  explicit Emitter(const ex_emitter* e) : e_(e) {}
  void keep(size_t input_index) const { e_->keep(e_->ctx, input_index); }
  void emit(const ex_record& r) const { e_->emit(e_->ctx, &r); }
  void reject(size_t input_index, std::string_view reason) const {
    e_->reject(e_->ctx, input_index, reason.data(), reason.size());
  }

 private:
  const ex_emitter* e_;
};

class RecordErrors {
 public:
  explicit RecordErrors(const ex_record_errors* e) : e_(e) {}
  void reject(size_t input_index, std::string_view reason) const {
    if (e_ && e_->reject) e_->reject(e_->ctx, input_index, reason.data(), reason.size());
  }
  // ABI 1.4: a record given by value (from a sink's completed(), after write returned).
  bool reject_record(const ex_record& r, std::string_view reason) const {
    if (!e_ || e_->struct_size < offsetof(ex_record_errors, reject_record) + sizeof(e_->reject_record) ||
        !e_->reject_record)
      return false;
    return e_->reject_record(e_->ctx, &r, reason.data(), reason.size()) == EX_OK;
  }

 private:
  const ex_record_errors* e_;
};

// ---------------------------------------------------------------- component bases
// Constructors take (Host, const Config&) and may throw ConfigError for bad settings.

class Source {
 public:
  virtual ~Source() = default;
  virtual Status open(const std::optional<Checkpoint>& resume) = 0;
  // Append records to `out` (cleared by the caller). Their bytes must stay valid until
  // the next poll/rewind. Set end_of_input when a bounded source is exhausted.
  virtual Status poll(int timeout_ms, std::vector<ex_record>& out, bool& end_of_input) = 0;
  virtual Status checkpoint(Checkpoint& out) = 0;
  virtual Status commit(const Checkpoint& positions) = 0;
  virtual Status rewind(const Checkpoint& positions) = 0;
  virtual Status pause(bool) { return Status::ok(); }
  virtual Status reconfigure(const Config&) { return Status::unsupported(); }
  // ABI 1.2: stop (paused) or continue single partitions; see ex_source_vtable. The
  // default makes the host answer a stage's hold() with "unsupported".
  virtual Status pause_partitions(const std::vector<Partition>&, bool /*paused*/) {
    return Status::unsupported("this source cannot pause single partitions");
  }
};

class Transform {
 public:
  virtual ~Transform() = default;
  virtual Status assign(const std::vector<Partition>&) { return Status::ok(); }
  virtual Status revoke(const std::vector<Partition>&) { return Status::ok(); }
  virtual Status process(const Batch& in, const Emitter& out) = 0;
  virtual Status prepare_commit() { return Status::ok(); }
  virtual Status commit() { return Status::ok(); }
  virtual Status abort() { return Status::ok(); }
  virtual Status reconfigure(const Config&) { return Status::unsupported(); }
  // Before prepare_commit: the source position after the last record read this round,
  // per partition that gave records (in start_offset).
  virtual Status positions(const std::vector<Partition>&) { return Status::ok(); }
  // ABI 1.2: partitions to keep warm copies of without owning them (a standby). Called
  // between rounds when the set changes and at least once a second; keep each call short.
  virtual Status standby(const std::vector<Partition>&) { return Status::ok(); }
};

class Sink {
 public:
  virtual ~Sink() = default;
  // Fill `stored` when this sink keeps source positions with its output.
  virtual Status open(std::optional<Checkpoint>& stored) {
    stored.reset();
    return Status::ok();
  }
  virtual Status assign(const std::vector<Partition>&) { return Status::ok(); }
  virtual Status revoke(const std::vector<Partition>&) { return Status::ok(); }
  virtual Status write(const Batch& in, const RecordErrors& errors) = 0;
  virtual Status prepare_commit() { return Status::ok(); }
  // Set stored_positions when `positions` became durable atomically with the output.
  virtual Status commit(const Checkpoint* positions, bool& stored_positions) = 0;
  // True when the positions this sink stores land in the source's own store (the kafka
  // sink writes the consumer group's offsets in its transaction): EX_SINK_POSITIONS_IN_SOURCE.
  virtual bool positions_in_source() const { return false; }
  virtual Status abort() { return Status::ok(); }
  virtual Status reconfigure(const Config&) { return Status::unsupported(); }
  // State changelogs for the pipeline's transforms (see ex_state_info). A sink that
  // cannot keep them leaves these as they are.
  virtual Status state_open(const std::string& /*store*/, const Partition&, StateInfo&) {
    return Status::unsupported("this sink does not keep state changelogs");
  }
  virtual Status state_read(const std::string& /*store*/, const Partition&, int64_t /*from*/,
                            const StateRecordFn&) {
    return Status::unsupported("this sink does not keep state changelogs");
  }
  virtual Status state_write(const std::string& /*store*/, const Partition&, ex_bytes /*key*/,
                             ex_bytes /*value*/) {
    return Status::unsupported("this sink does not keep state changelogs");
  }
  virtual int64_t state_position(const std::string& /*store*/, const Partition&) { return -1; }
};

}  // namespace exactly::sdk

// ---------------------------------------------------------------- boundary adapters
// How the classes above are exported through the C ABI (not for plugin authors).
#include <exactly/detail/guard.hpp>
#include <exactly/detail/lifecycle.hpp>
#include <exactly/detail/source_adapter.hpp>
#include <exactly/detail/transform_adapter.hpp>
#include <exactly/detail/sink_adapter.hpp>

namespace exactly::sdk {

// ---------------------------------------------------------------- registration

// Schema helpers, usable in static arrays.
constexpr ex_config_field field(const char* key, ex_config_type type, const char* doc,
                                const char* default_value = nullptr,
                                const char* const* allowed = nullptr) {
  return ex_config_field{sizeof(ex_config_field), key, type, 0, default_value, doc, allowed, 0};
}
constexpr ex_config_field required(const char* key, ex_config_type type, const char* doc,
                                   const char* const* allowed = nullptr) {
  return ex_config_field{sizeof(ex_config_field), key, type, 1, nullptr, doc, allowed, 0};
}
// A key whose value is the path of a file one component holds alone (ABI 1.6,
// EX_CFG_EXCLUSIVE_PATH): `exclusive_path(required("path", EX_CFG_STRING, "..."))`.
constexpr ex_config_field exclusive_path(ex_config_field f) {
  f.flags |= EX_CFG_EXCLUSIVE_PATH;
  return f;
}

template <typename T, size_t N>
ex_component source(const char* name, const char* doc, const ex_config_field (&fields)[N]) {
  return ex_component{sizeof(ex_component), EX_KIND_SOURCE, name, doc, fields, N,
                      detail::SourceAdapter<T>::vtable()};
}
template <typename T, size_t N>
ex_component transform(const char* name, const char* doc, const ex_config_field (&fields)[N]) {
  return ex_component{sizeof(ex_component), EX_KIND_TRANSFORM, name, doc, fields, N,
                      detail::TransformAdapter<T>::vtable()};
}
template <typename T, size_t N>
ex_component sink(const char* name, const char* doc, const ex_config_field (&fields)[N]) {
  return ex_component{sizeof(ex_component), EX_KIND_SINK, name, doc, fields, N,
                      detail::SinkAdapter<T>::vtable()};
}

}  // namespace exactly::sdk

// Exports the plugin. Usage (once per library, at namespace scope):
//   EXACTLY_PLUGIN("myplugin", "1.0.0",
//                  exactly::sdk::transform<MyTransform>("upper", "Upper-cases values", kFields))
#define EXACTLY_PLUGIN(NAME, VERSION, ...)                                                  \
  extern "C" EX_EXPORT const ex_plugin_descriptor* exactly_plugin_descriptor(              \
      uint32_t host_abi_version) {                                                         \
    if ((host_abi_version >> 16) != EX_ABI_VERSION_MAJOR) return nullptr;                   \
    static const ex_component components[] = {__VA_ARGS__};                                 \
    static const ex_plugin_descriptor descriptor = {                                        \
        sizeof(ex_plugin_descriptor), EX_ABI_VERSION, NAME, VERSION, components,             \
        sizeof(components) / sizeof(components[0]), EX_PLUGIN_BUILD_FACTS};                 \
    return &descriptor;                                                                     \
  }
