// exactly plugin test harness — header-only. Loads a plugin .so through the real C ABI
// (dlopen + the exported descriptor function) and drives its components with batches,
// the way the host does, without a host. For plugin authors' unit tests.
//
//   exactly::testing::Library lib("build/plugins/exactly_dedupe.so");
//   exactly::testing::TransformHarness t(lib, "dedupe", {{"id.key", "true"}, ...});
//   auto out = t.process({rec("k1", "v1", /*partition*/0, /*offset*/0)});
#pragma once

#include <dlfcn.h>
#include <cstddef>
#include <exactly/plugin_abi.h>
#include <exactly/sdk.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace exactly::testing {

using Pairs = std::vector<std::pair<std::string, std::string>>;

// A record that owns its bytes.
struct OwnedRecord {
  std::optional<std::string> key;
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;
  int32_t partition = 0;
  int64_t offset = 0;
  int64_t timestamp_ms = -1;

  static OwnedRecord from(const ex_record& r) {
    OwnedRecord o;
    if (r.key.ptr != nullptr) o.key = std::string(sdk::view(r.key));
    o.value = std::string(sdk::view(r.value));
    for (uint32_t i = 0; i < r.header_count; ++i)
      o.headers.emplace_back(std::string(sdk::view(r.headers[i].key)),
                             std::string(sdk::view(r.headers[i].value)));
    o.partition = r.partition;
    o.offset = r.offset;
    o.timestamp_ms = r.timestamp_ms;
    return o;
  }
};

inline OwnedRecord rec(std::optional<std::string> key, std::string value, int32_t partition = 0,
                       int64_t offset = 0) {
  OwnedRecord r;
  r.key = std::move(key);
  r.value = std::move(value);
  r.partition = partition;
  r.offset = offset;
  return r;
}

// Keeps ex_record views (and their header arrays) pointing into OwnedRecords.
class BatchView {
 public:
  explicit BatchView(const std::vector<OwnedRecord>& in) {
    headers_.resize(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      for (auto& [k, v] : in[i].headers) headers_[i].push_back({sdk::bytes(k), sdk::bytes(v)});
      ex_record r{};
      r.key = in[i].key ? sdk::bytes(*in[i].key) : sdk::null_bytes();
      r.value = sdk::bytes(in[i].value);
      r.headers = headers_[i].data();
      r.header_count = static_cast<uint32_t>(headers_[i].size());
      r.partition = in[i].partition;
      r.offset = in[i].offset;
      r.timestamp_ms = in[i].timestamp_ms;
      records_.push_back(r);
    }
    batch_ = ex_batch{sizeof(ex_batch), sizeof(ex_record), records_.data(), records_.size()};
  }
  const ex_batch* get() const { return &batch_; }

 private:
  std::vector<std::vector<ex_header>> headers_;
  std::vector<ex_record> records_;
  ex_batch batch_{};
};

class Library {
 public:
  explicit Library(const std::string& path) {
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
    auto fn = reinterpret_cast<ex_plugin_entry_fn>(dlsym(handle_, EX_PLUGIN_ENTRY_SYMBOL));
    if (fn == nullptr) throw std::runtime_error(path + ": not an exactly plugin");
    desc_ = fn(EX_ABI_VERSION);
    if (desc_ == nullptr) throw std::runtime_error(path + ": plugin refused this ABI");
  }
  ~Library() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const ex_plugin_descriptor* descriptor() const { return desc_; }
  const ex_component& component(ex_component_kind kind, const std::string& name) const {
    for (size_t i = 0; i < desc_->component_count; ++i) {
      const auto& c = desc_->components[i];
      if (c.kind == kind && name == c.name) return c;
    }
    throw std::runtime_error("no component '" + name + "' of that kind");
  }

 private:
  void* handle_ = nullptr;
  const ex_plugin_descriptor* desc_ = nullptr;
};

// Host services recorded for assertions.
class FakeHost {
 public:
  explicit FakeHost(std::string pipeline = "test") : pipeline_(std::move(pipeline)) {
    api_.struct_size = sizeof(api_);
    api_.ctx = reinterpret_cast<ex_host_ctx>(this);
    api_.pipeline_name = pipeline_.c_str();
    api_.component_id = "harness";
    api_.log = [](ex_host_ctx ctx, int32_t level, const char* m, size_t n) {
      auto* h = reinterpret_cast<FakeHost*>(ctx);
      std::lock_guard<std::mutex> g(h->mu_);
      h->logs.emplace_back(level, std::string(m, n));
    };
    api_.metric = [](ex_host_ctx ctx, int32_t kind, const char* name, const char* labels, double v) {
      auto* h = reinterpret_cast<FakeHost*>(ctx);
      std::lock_guard<std::mutex> g(h->mu_);
      std::string k = std::string(name) + (labels && *labels ? "{" + std::string(labels) + "}" : "");
      if (kind == EX_METRIC_COUNTER)
        h->metrics[k] += v;
      else
        h->metrics[k] = v;
    };
    api_.partitions_assigned = [](ex_host_ctx ctx, const ex_partition* p, size_t n, ex_error*) {
      auto* h = reinterpret_cast<FakeHost*>(ctx);
      for (auto& x : sdk::partitions_from(p, n)) h->assigned.push_back(x);
      return int32_t{EX_OK};
    };
    api_.partitions_revoked = [](ex_host_ctx ctx, const ex_partition* p, size_t n, ex_error*) {
      auto* h = reinterpret_cast<FakeHost*>(ctx);
      for (auto& x : sdk::partitions_from(p, n)) h->revoked.push_back(x);
      return int32_t{EX_OK};
    };
    api_.standby = [](ex_host_ctx ctx, const ex_partition* p, size_t n, ex_error*) {
      auto* h = reinterpret_cast<FakeHost*>(ctx);
      h->standby = sdk::partitions_from(p, n);
      ++h->standby_calls;
      return int32_t{EX_OK};
    };
    api_.stopping = [](ex_host_ctx ctx) {
      return int32_t{reinterpret_cast<FakeHost*>(ctx)->stop_asked_.load() ? 1 : 0};
    };
  }
  // ABI 1.5: what stopping() answers from now on, as a host asked to stop (any thread).
  void ask_stop() { stop_asked_.store(true); }
  const ex_host_api* api() const { return &api_; }

  // ABI 1.2 holds: a stage may hold back a partition; release() may come from any thread.
  void enable_hold() {
    api_.hold = [](ex_host_ctx ctx, const ex_partition* p, ex_error*) {
      auto* h = reinterpret_cast<FakeHost*>(ctx);
      std::lock_guard<std::mutex> g(h->mu_);
      h->held_.push_back(sdk::Partition::from(*p).name);
      return int32_t{EX_OK};
    };
    api_.release = [](ex_host_ctx ctx, const ex_partition* p) {
      auto* h = reinterpret_cast<FakeHost*>(ctx);
      std::lock_guard<std::mutex> g(h->mu_);
      h->released_.push_back(sdk::Partition::from(*p).name);
      h->cv_.notify_all();
    };
  }
  std::vector<std::string> held() const {
    std::lock_guard<std::mutex> g(mu_);
    return held_;
  }
  std::vector<std::string> released() const {
    std::lock_guard<std::mutex> g(mu_);
    return released_;
  }
  bool wait_released(const std::string& name, std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> g(mu_);
    return cv_.wait_for(g, limit, [&] {
      return std::find(released_.begin(), released_.end(), name) != released_.end();
    });
  }

  // An in-memory stand-in for a sink that keeps state changelogs (ABI 1.1), shared by
  // every stage built on this host (two stages = two "hosts" of one cluster). Writes
  // wait for commit_state(), as a transaction would; abort_state() drops them.
  struct StateRecord {
    std::string key;
    std::optional<std::string> value;  // nullopt = tombstone
  };
  void enable_state() {
    api_.state_supported = [](ex_host_ctx) { return int32_t{1}; };
    api_.state_open = [](ex_host_ctx ctx, ex_bytes store, const ex_partition* p, ex_state_info* info,
                         ex_error*) {
      auto& log = reinterpret_cast<FakeHost*>(ctx)->state_log(store, *p);
      info->start = 0;
      info->end = static_cast<int64_t>(log.size());
      info->created = 0;
      return int32_t{EX_OK};
    };
    api_.state_read = [](ex_host_ctx ctx, ex_bytes store, const ex_partition* p, int64_t from,
                         ex_state_record_fn fn, ex_state_read_ctx fn_ctx, ex_error* err) {
      auto& log = reinterpret_cast<FakeHost*>(ctx)->state_log(store, *p);
      for (size_t i = static_cast<size_t>(from < 0 ? 0 : from); i < log.size(); ++i) {
        const auto& r = log[i];
        ex_bytes v = r.value ? sdk::bytes(*r.value) : sdk::null_bytes();
        if (fn(fn_ctx, static_cast<int64_t>(i), sdk::bytes(r.key), v) != 0) {
          err->code = EX_ERR_FATAL;
          return int32_t{EX_ERR_FATAL};
        }
      }
      return int32_t{EX_OK};
    };
    api_.state_write = [](ex_host_ctx ctx, ex_bytes store, const ex_partition* p, ex_bytes key,
                          ex_bytes value, ex_error*) {
      auto* h = reinterpret_cast<FakeHost*>(ctx);
      std::optional<std::string> v;
      if (value.ptr != nullptr) v = std::string(sdk::view(value));
      h->pending_state_.push_back({state_key(store, *p), {std::string(sdk::view(key)), v}});
      return int32_t{EX_OK};
    };
    api_.state_position = [](ex_host_ctx ctx, ex_bytes store, const ex_partition* p) -> int64_t {
      auto* h = reinterpret_cast<FakeHost*>(ctx);
      auto it = h->state_positions_.find(state_key(store, *p));
      return it == h->state_positions_.end() ? -1 : it->second;
    };
  }
  // A host that says it keeps state but whose sink answers every state_open
  // "unsupported" (as a sink without changelogs does): stages with `changelog: auto` go
  // on without one.
  void refuse_state_opens() {
    api_.state_supported = [](ex_host_ctx) { return int32_t{1}; };
    api_.state_open = [](ex_host_ctx, ex_bytes, const ex_partition*, ex_state_info*, ex_error* err) {
      err->code = EX_ERR_UNSUPPORTED;
      return int32_t{EX_ERR_UNSUPPORTED};
    };
  }
  void commit_state() {
    for (auto& [k, r] : pending_state_) {
      state_[k].push_back(std::move(r));
      state_positions_[k] = static_cast<int64_t>(state_[k].size());
    }
    pending_state_.clear();
  }
  void abort_state() { pending_state_.clear(); }
  // The committed log of `store`'s partition `number`.
  std::vector<StateRecord>& state(const std::string& store, int32_t number) {
    return state_[store + "#" + std::to_string(number)];
  }
  double metric(const std::string& k) const {
    std::lock_guard<std::mutex> g(mu_);
    auto it = metrics.find(k);
    return it == metrics.end() ? 0.0 : it->second;
  }

  // A copy of `logs`, safe while a plugin's own threads log (librdkafka's do).
  std::vector<std::pair<int32_t, std::string>> log_lines() const {
    std::lock_guard<std::mutex> g(mu_);
    return logs;
  }

  std::vector<std::pair<int32_t, std::string>> logs;
  std::map<std::string, double> metrics;
  std::vector<sdk::Partition> assigned, revoked;
  std::vector<sdk::Partition> standby;  // the last set a source reported (ABI 1.2)
  int standby_calls = 0;

 private:
  static std::string state_key(ex_bytes store, const ex_partition& p) {
    return std::string(sdk::view(store)) + "#" + std::to_string(p.number);
  }
  std::vector<StateRecord>& state_log(ex_bytes store, const ex_partition& p) {
    return state_[state_key(store, p)];
  }

  std::string pipeline_;
  ex_host_api api_{};
  mutable std::mutex mu_;
  std::atomic<bool> stop_asked_{false};
  std::condition_variable cv_;
  std::vector<std::string> held_, released_;
  std::map<std::string, std::vector<StateRecord>> state_;
  std::vector<std::pair<std::string, StateRecord>> pending_state_;
  std::map<std::string, int64_t> state_positions_;
};

// Fills schema defaults for keys the test did not give (the host does this too).
class OwnedConfig {
 public:
  OwnedConfig(const ex_component& c, const Pairs& given) : kv_(given) {
    for (size_t i = 0; i < c.field_count; ++i) {
      const auto& f = c.fields[i];
      bool present = false;
      for (auto& [k, v] : given)
        if (k == f.key || k.rfind(std::string(f.key) + ".", 0) == 0) present = true;
      if (!present && f.default_value != nullptr && f.type != EX_CFG_LIST)
        kv_.emplace_back(f.key, f.default_value);
    }
    for (auto& [k, v] : kv_) entries_.push_back({sdk::bytes(k), sdk::bytes(v)});
    cfg_ = ex_config{sizeof(ex_config), entries_.data(), entries_.size()};
  }
  const ex_config* get() const { return &cfg_; }

 private:
  Pairs kv_;
  std::vector<ex_config_entry> entries_;
  ex_config cfg_{};
};

// Read no further than the arrays: a plugin that forgot the NUL gets a cut message.
inline sdk::Status status_of(int32_t rc, const ex_error& e) {
  return rc == EX_OK ? sdk::Status::ok()
                     : sdk::Status::error(static_cast<ex_status>(rc),
                                          std::string(e.message, strnlen(e.message, sizeof(e.message))),
                                          std::string(e.key, strnlen(e.key, sizeof(e.key))));
}
inline ex_error new_error() {
  ex_error e{};
  e.struct_size = sizeof(e);
  return e;
}

// keep()/reject() of an index past the batch: a plugin bug that the SDK's void calls
// cannot report. Kept (the first one) to fail the call as the host does.
inline int32_t bad_index(std::string& first, const char* call, size_t index, size_t count) noexcept {
  if (first.empty()) {
    try {
      first = std::string(call) + "(" + std::to_string(index) + ") on a batch of " + std::to_string(count) +
              " record(s)";
    } catch (...) {
    }
  }
  return EX_ERR_FATAL;
}
inline void set_bad_index_error(ex_error& e, const std::string& call) {
  std::snprintf(e.message, sizeof(e.message),
                "a record index out of the batch (%s): the plugin's bug; the round is not committed",
                call.c_str());
}

// A required vtable member left NULL, refused as the host refuses it.
inline int32_t not_implemented(ex_error& e, const char* call) {
  e.code = EX_ERR_FATAL;
  std::snprintf(e.message, sizeof(e.message), "the component does not implement %s", call);
  return EX_ERR_FATAL;
}

// The config against the component's schema, as the host checks it before anything
// runs: every key declared (a map's "<key>.<sub>" under a map field), every required key
// given, values of the declared type. The harness passes values as text without
// normalising them, so durations and sizes must be plain numbers (milliseconds, bytes),
// as the host hands them to the plugin. The first problem is returned as EX_ERR_CONFIG
// naming its key.
inline sdk::Status check_schema(const ex_component& c, const Pairs& given) {
  auto field_of = [&](const std::string& k) -> const ex_config_field* {
    for (size_t i = 0; i < c.field_count; ++i) {
      const auto& f = c.fields[i];
      if (k == f.key) return &f;
      if (f.type == EX_CFG_MAP && k.rfind(std::string(f.key) + ".", 0) == 0) return &f;
    }
    return nullptr;
  };
  auto whole_int = [](const std::string& v) {
    if (v.empty()) return false;
    size_t i = v[0] == '-' ? 1 : 0;
    if (i == v.size() || v.size() - i > 19) return false;
    return std::all_of(v.begin() + static_cast<long>(i), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  };
  for (const auto& [k, v] : given) {
    const ex_config_field* f = field_of(k);
    if (f == nullptr)
      return sdk::Status::config(k, "unknown key '" + k + "' (not in the component's schema: the host refuses it)");
    if (f->type == EX_CFG_MAP && k != f->key) continue;
    const std::string key(f->key);
    switch (f->type) {
      case EX_CFG_INT:
        if (!whole_int(v)) return sdk::Status::config(key, "'" + v + "' is not an integer");
        break;
      case EX_CFG_DURATION:
      case EX_CFG_SIZE:
        if (!whole_int(v) || v[0] == '-')
          return sdk::Status::config(key, "'" + v + "': the harness passes values as the host hands them to "
                                          "the plugin, so give a plain number (" +
                                          (f->type == EX_CFG_DURATION ? "milliseconds: '30000', not '30s'"
                                                                      : "bytes: '1048576', not '1MiB'") + ")");
        break;
      case EX_CFG_DOUBLE: {
        char* end = nullptr;
        (void)std::strtod(v.c_str(), &end);
        if (v.empty() || end != v.c_str() + v.size()) return sdk::Status::config(key, "'" + v + "' is not a number");
        break;
      }
      case EX_CFG_BOOL:
        if (v != "true" && v != "false") return sdk::Status::config(key, "'" + v + "' is not true or false");
        break;
      case EX_CFG_STRING:
        if (f->allowed != nullptr) {
          bool ok = false;
          std::string list;
          for (const char* const* a = f->allowed; *a != nullptr; ++a) {
            ok = ok || v == *a;
            list += (list.empty() ? "" : ", ") + std::string(*a);
          }
          if (!ok) return sdk::Status::config(key, "'" + v + "' is not one of: " + list);
        }
        break;
      default:
        break;
    }
  }
  for (size_t i = 0; i < c.field_count; ++i) {
    const auto& f = c.fields[i];
    if (!f.required) continue;
    const bool present = std::any_of(given.begin(), given.end(), [&](const auto& kv) {
      return kv.first == f.key || (f.type == EX_CFG_MAP && kv.first.rfind(std::string(f.key) + ".", 0) == 0);
    });
    if (!present) return sdk::Status::config(f.key, "required key '" + std::string(f.key) + "' is missing");
  }
  return sdk::Status::ok();
}

// The component's plugin-level check (ABI 1.3 `validate`) on `config` with schema
// defaults filled, as the host runs it for `exactly validate`. A component without one
// (NULL, or a vtable from an older minor) answers ok: only the schema would be checked.
inline sdk::Status validate(const Library& lib, ex_component_kind kind, const std::string& name,
                            const Pairs& config) {
  const ex_component& c = lib.component(kind, name);
  OwnedConfig cfg(c, config);
  using Fn = int32_t (*)(const ex_config*, ex_error*);
  Fn fn = nullptr;
  uint32_t size = *static_cast<const uint32_t*>(c.vtable);
  auto pick = [&](const auto* vt) {
    using VT = std::remove_cv_t<std::remove_pointer_t<decltype(vt)>>;
    if (size >= offsetof(VT, validate) + sizeof(vt->validate)) fn = vt->validate;
  };
  switch (kind) {
    case EX_KIND_SOURCE: pick(static_cast<const ex_source_vtable*>(c.vtable)); break;
    case EX_KIND_TRANSFORM: pick(static_cast<const ex_transform_vtable*>(c.vtable)); break;
    case EX_KIND_SINK: pick(static_cast<const ex_sink_vtable*>(c.vtable)); break;
  }
  if (fn == nullptr) return sdk::Status::ok();
  ex_error e = new_error();
  return status_of(fn(cfg.get(), &e), e);
}

// What the host does before create(): the schema, then the component's validate().
inline sdk::Status check_before_create(const Library& lib, ex_component_kind kind, const std::string& name,
                                       const Pairs& config) {
  sdk::Status st = check_schema(lib.component(kind, name), config);
  if (!st.is_ok()) return st;
  return validate(lib, kind, name, config);
}

// What the three harnesses share: the component's vtable, a host (the caller's or one
// of its own), and the instance made by create() once the config passed the checks the
// host makes first; destroyed with the harness.
template <typename Vtable, typename Self, ex_component_kind Kind>
class ComponentHarness {
 public:
  ComponentHarness(const ComponentHarness&) = delete;
  ComponentHarness& operator=(const ComponentHarness&) = delete;
  ~ComponentHarness() {
    if (self_) vt_->destroy(self_);
  }
  const sdk::Status& create_status() const { return create_status_; }
  bool ok() const { return self_ != nullptr; }
  FakeHost& host() { return *host_; }

 protected:
  ComponentHarness(const Library& lib, const std::string& name, const Pairs& config, FakeHost* host)
      : vt_(static_cast<const Vtable*>(lib.component(Kind, name).vtable)),
        host_(host ? host : &own_host_) {
    // Refused before create() as the host refuses it: create() never sees such a config.
    create_status_ = check_before_create(lib, Kind, name, config);
    if (!create_status_.is_ok()) return;
    OwnedConfig cfg(lib.component(Kind, name), config);
    ex_error e = new_error();
    int32_t rc = vt_->create(host_->api(), cfg.get(), &self_, &e);
    create_status_ = status_of(rc, e);
    if (rc != EX_OK) self_ = nullptr;
  }
  // A call that takes only the instance and an error (prepare_commit, commit, abort).
  // As the host does: an optional member left NULL is skipped (ok), a required one is
  // refused with its name (QA: `exactly test` of the C example crashed on its NULL assign).
  sdk::Status simple(int32_t (*fn)(Self, ex_error*)) {
    if (fn == nullptr) return sdk::Status::ok();
    ex_error e = new_error();
    return status_of(fn(self_, &e), e);
  }

  const Vtable* vt_;
  FakeHost own_host_;
  FakeHost* host_;
  Self self_ = nullptr;
  sdk::Status create_status_;
};

struct TransformOutput {
  std::vector<OwnedRecord> records;
  std::vector<size_t> kept;                             // input indices kept as-is
  std::vector<std::pair<size_t, std::string>> rejected; // input index, reason
};

class TransformHarness : public ComponentHarness<ex_transform_vtable, ex_transform_self, EX_KIND_TRANSFORM> {
 public:
  TransformHarness(const Library& lib, const std::string& name, const Pairs& config,
                  FakeHost* host = nullptr)
      : ComponentHarness(lib, name, config, host) {}

  sdk::Status assign(const std::vector<sdk::Partition>& parts) { return parts_call(parts, vt_->assign); }
  sdk::Status revoke(const std::vector<sdk::Partition>& parts) { return parts_call(parts, vt_->revoke); }

  TransformOutput process(const std::vector<OwnedRecord>& in, sdk::Status* st = nullptr) {
    BatchView view(in);
    TransformOutput out;
    struct Ctx {
      const std::vector<OwnedRecord>* in;
      TransformOutput* out;
      std::string bad_index;  // as the host: the first keep()/reject() past the batch
    } ctx{&in, &out, {}};
    // As the host does (pipeline_records.cpp): an index past the batch is refused and fails
    // the call; nothing throws back across the C ABI into the plugin.
    ex_emitter em{sizeof(ex_emitter), reinterpret_cast<ex_emitter_ctx>(&ctx),
                  [](ex_emitter_ctx c, size_t i) {
                    auto* x = reinterpret_cast<Ctx*>(c);
                    if (i >= x->in->size()) return bad_index(x->bad_index, "keep", i, x->in->size());
                    try {
                      x->out->kept.push_back(i);
                      x->out->records.push_back((*x->in)[i]);
                    } catch (...) {
                      return int32_t{EX_ERR_FATAL};
                    }
                    return int32_t{EX_OK};
                  },
                  [](ex_emitter_ctx c, const ex_record* r) {
                    if (r == nullptr) return int32_t{EX_ERR_FATAL};
                    try {
                      reinterpret_cast<Ctx*>(c)->out->records.push_back(OwnedRecord::from(*r));
                    } catch (...) {
                      return int32_t{EX_ERR_FATAL};
                    }
                    return int32_t{EX_OK};
                  },
                  [](ex_emitter_ctx c, size_t i, const char* m, size_t n) {
                    auto* x = reinterpret_cast<Ctx*>(c);
                    if (i >= x->in->size()) return bad_index(x->bad_index, "reject", i, x->in->size());
                    try {
                      x->out->rejected.emplace_back(i, m != nullptr ? std::string(m, n) : std::string());
                    } catch (...) {
                      return int32_t{EX_ERR_FATAL};
                    }
                    return int32_t{EX_OK};
                  }};
    ex_error e = new_error();
    int32_t rc = vt_->process != nullptr ? vt_->process(self_, view.get(), &em, &e) : not_implemented(e, "process");
    if (rc == EX_OK && !ctx.bad_index.empty()) {
      rc = EX_ERR_FATAL;
      set_bad_index_error(e, ctx.bad_index);
    }
    if (st) *st = status_of(rc, e);
    if (rc != EX_OK && !st) throw std::runtime_error("process failed: " + std::string(e.message));
    return out;
  }
  // ABI 1.1: the source positions the round read up to (start_offset per partition).
  sdk::Status positions(const std::vector<sdk::Partition>& parts) {
    if (vt_->struct_size < offsetof(ex_transform_vtable, positions) + sizeof(vt_->positions) ||
        vt_->positions == nullptr)
      return sdk::Status::ok();
    return parts_call(parts, vt_->positions);
  }
  // ABI 1.2: the partitions to keep warm copies of (the host calls this between rounds).
  sdk::Status standby(const std::vector<sdk::Partition>& parts) {
    if (vt_->struct_size < offsetof(ex_transform_vtable, standby) + sizeof(vt_->standby) ||
        vt_->standby == nullptr)
      return sdk::Status::ok();
    return parts_call(parts, vt_->standby);
  }
  sdk::Status prepare_commit() { return simple(vt_->prepare_commit); }
  sdk::Status commit() { return simple(vt_->commit); }
  sdk::Status abort() { return simple(vt_->abort); }
  sdk::Status reconfigure(const Pairs& config) {
    // Defaults are not re-filled here; pass the full config.
    std::vector<ex_config_entry> entries;
    for (auto& [k, v] : config) entries.push_back({sdk::bytes(k), sdk::bytes(v)});
    ex_config c{sizeof(ex_config), entries.data(), entries.size()};
    ex_error e = new_error();
    return status_of(vt_->reconfigure ? vt_->reconfigure(self_, &c, &e) : EX_ERR_UNSUPPORTED, e);
  }

 private:
  using PartsFn = int32_t (*)(ex_transform_self, const ex_partition*, size_t, ex_error*);
  sdk::Status parts_call(const std::vector<sdk::Partition>& parts, PartsFn fn) {
    if (fn == nullptr) return sdk::Status::ok();
    std::vector<ex_partition> abi;
    for (auto& p : parts) abi.push_back(p.to_abi());
    ex_error e = new_error();
    return status_of(fn(self_, abi.data(), abi.size(), &e), e);
  }
};

class SourceHarness : public ComponentHarness<ex_source_vtable, ex_source_self, EX_KIND_SOURCE> {
 public:
  SourceHarness(const Library& lib, const std::string& name, const Pairs& config,
               FakeHost* host = nullptr)
      : ComponentHarness(lib, name, config, host) {}

  sdk::Status open(const std::optional<sdk::Checkpoint>& resume = std::nullopt) {
    ex_error e = new_error();
    if (vt_->open == nullptr) return status_of(not_implemented(e, "open"), e);
    if (!resume) return status_of(vt_->open(self_, nullptr, &e), e);
    ex_checkpoint cp{sizeof(cp), sdk::bytes(resume->format), sdk::bytes(resume->data)};
    return status_of(vt_->open(self_, &cp, &e), e);
  }
  // One poll; `eoi` reports end of input.
  std::vector<OwnedRecord> poll(int timeout_ms, bool* eoi = nullptr, sdk::Status* st = nullptr) {
    ex_batch b{};
    int32_t end = 0;
    ex_error e = new_error();
    int32_t rc = vt_->poll != nullptr ? vt_->poll(self_, timeout_ms, &b, &end, &e) : not_implemented(e, "poll");
    if (st) *st = status_of(rc, e);
    if (eoi) *eoi = end != 0;
    std::vector<OwnedRecord> out;
    sdk::Batch batch(&b);
    for (size_t i = 0; i < batch.size(); ++i) out.push_back(OwnedRecord::from(batch[i]));
    return out;
  }
  sdk::Checkpoint checkpoint() {
    ex_checkpoint cp{};
    ex_error e = new_error();
    int32_t rc = vt_->checkpoint != nullptr ? vt_->checkpoint(self_, &cp, &e) : not_implemented(e, "checkpoint");
    if (rc != EX_OK) throw std::runtime_error("checkpoint failed: " + std::string(e.message));
    return sdk::Checkpoint::from(&cp);
  }
  sdk::Status commit(const sdk::Checkpoint& c) { return vt_->commit ? cp_call(c, vt_->commit) : sdk::Status::ok(); }
  sdk::Status rewind(const sdk::Checkpoint& c) {
    if (vt_->rewind != nullptr) return cp_call(c, vt_->rewind);
    ex_error e = new_error();
    return status_of(not_implemented(e, "rewind"), e);
  }
  // ABI 1.2: stop or continue single partitions (start_offset = where to continue).
  sdk::Status pause_partitions(const std::vector<sdk::Partition>& parts, bool paused) {
    if (vt_->struct_size < offsetof(ex_source_vtable, pause_partitions) + sizeof(vt_->pause_partitions) ||
        vt_->pause_partitions == nullptr)
      return sdk::Status::unsupported("no pause_partitions");
    std::vector<ex_partition> abi;
    for (auto& p : parts) abi.push_back(p.to_abi());
    ex_error e{};
    e.struct_size = sizeof(e);
    int32_t rc = vt_->pause_partitions(self_, abi.data(), abi.size(), paused ? 1 : 0, &e);
    return rc == EX_OK ? sdk::Status::ok() : sdk::Status::error(static_cast<ex_status>(rc), e.message);
  }

 private:
  sdk::Status cp_call(const sdk::Checkpoint& c,
                      int32_t (*fn)(ex_source_self, const ex_checkpoint*, ex_error*)) {
    ex_checkpoint cp{sizeof(cp), sdk::bytes(c.format), sdk::bytes(c.data)};
    ex_error e = new_error();
    return status_of(fn(self_, &cp, &e), e);
  }
};

class SinkHarness : public ComponentHarness<ex_sink_vtable, ex_sink_self, EX_KIND_SINK> {
 public:
  SinkHarness(const Library& lib, const std::string& name, const Pairs& config,
             FakeHost* host = nullptr)
      : ComponentHarness(lib, name, config, host) {}

  // The input partitions whose records will come (a sink may place output by them).
  sdk::Status assign(const std::vector<sdk::Partition>& parts) {
    if (vt_->assign == nullptr) return sdk::Status::ok();
    std::vector<ex_partition> abi;
    for (auto& p : parts) abi.push_back(p.to_abi());
    ex_error e = new_error();
    return status_of(vt_->assign(self_, abi.data(), abi.size(), &e), e);
  }

  sdk::Status open(std::optional<sdk::Checkpoint>* stored = nullptr) {
    ex_checkpoint cp{};
    int32_t has = 0;
    ex_error e = new_error();
    int32_t rc = vt_->open(self_, &cp, &has, &e);
    if (stored) {
      if (has)
        *stored = sdk::Checkpoint::from(&cp);
      else
        stored->reset();
    }
    return status_of(rc, e);
  }
  // Returns the records the sink rejected. A sink with a completion window (ABI 1.4) is
  // then asked, as a host ending its last round would, until nothing of `in` is open;
  // its late record errors are matched back to their index in `in`.
  std::vector<std::pair<size_t, std::string>> write(const std::vector<OwnedRecord>& in,
                                                    sdk::Status* st = nullptr) {
    auto rejected = write_async(in, st);
    if (!has_completed() || (st && !*st)) return rejected;
    std::map<int32_t, int64_t> scan;
    for (const auto& r : in) scan[r.partition] = std::max(scan[r.partition], r.offset + 1);
    // A sink whose window never drains must fail the test, not hang it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (;;) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("completed() still reports open records after 120 s");
      std::vector<sdk::Partition> parts;
      for (auto [id, pos] : scan) parts.push_back(sdk::Partition{id, "p" + std::to_string(id), "", id, pos});
      std::vector<OwnedRecord> late;
      sdk::Status c = completed(parts, late);
      if (!c) throw std::runtime_error("completed failed: " + c.message());
      for (const auto& l : late)
        for (size_t i = 0; i < in.size(); ++i)
          if (in[i].partition == l.partition && in[i].offset == l.offset && in[i].value == l.value &&
              in[i].key == l.key) {
            rejected.emplace_back(i, l.headers.empty() ? "" : l.headers.back().second);
            break;
          }
      bool open = false;
      for (const auto& p : parts) open = open || p.start_offset < scan[p.id];
      if (!open) return rejected;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  bool has_completed() const {
    return vt_->struct_size >= offsetof(ex_sink_vtable, completed) + sizeof(vt_->completed) &&
           vt_->completed != nullptr;
  }
  // ABI 1.4: lowers `parts` to each one's lowest open record; records that failed after
  // write returned are appended to `late`, with the reason as their last header
  // ("exactly.error").
  sdk::Status completed(std::vector<sdk::Partition>& parts, std::vector<OwnedRecord>& late) {
    if (!has_completed()) return sdk::Status::unsupported("no completion window");
    std::vector<ex_partition> abi;
    for (const auto& p : parts) abi.push_back(p.to_abi());
    ex_record_errors errs{sizeof(errs), reinterpret_cast<ex_record_errors_ctx>(&late),
                          [](ex_record_errors_ctx, size_t, const char*, size_t) {
                            return int32_t{EX_ERR_FATAL};
                          },
                          [](ex_record_errors_ctx c, const ex_record* r, const char* m, size_t n) {
                            auto o = OwnedRecord::from(*r);
                            o.headers.emplace_back("exactly.error", std::string(m, n));
                            reinterpret_cast<std::vector<OwnedRecord>*>(c)->push_back(std::move(o));
                            return int32_t{EX_OK};
                          }};
    ex_error e = new_error();
    int32_t rc = vt_->completed(self_, abi.data(), abi.size(), &errs, &e);
    for (size_t i = 0; i < abi.size(); ++i) parts[i].start_offset = abi[i].start_offset;
    return status_of(rc, e);
  }
  sdk::Status revoke(const std::vector<sdk::Partition>& parts) {
    std::vector<ex_partition> abi;
    for (const auto& p : parts) abi.push_back(p.to_abi());
    ex_error e = new_error();
    return vt_->revoke ? status_of(vt_->revoke(self_, abi.data(), abi.size(), &e), e) : sdk::Status::ok();
  }
  // write() without waiting for a completion window to empty.
  std::vector<std::pair<size_t, std::string>> write_async(const std::vector<OwnedRecord>& in,
                                                          sdk::Status* st = nullptr) {
    BatchView view(in);
    std::vector<std::pair<size_t, std::string>> rejected;
    struct Ctx {
      std::vector<std::pair<size_t, std::string>>* rejected;
      size_t count;
      std::string bad_index;
    } ctx{&rejected, in.size(), {}};
    ex_record_errors errs{sizeof(errs), reinterpret_cast<ex_record_errors_ctx>(&ctx),
                          [](ex_record_errors_ctx c, size_t i, const char* m, size_t n) {
                            auto* x = reinterpret_cast<Ctx*>(c);
                            if (i >= x->count) return bad_index(x->bad_index, "reject", i, x->count);
                            try {
                              x->rejected->emplace_back(i, m != nullptr ? std::string(m, n) : std::string());
                            } catch (...) {
                              return int32_t{EX_ERR_FATAL};
                            }
                            return int32_t{EX_OK};
                          },
                          nullptr};
    ex_error e = new_error();
    int32_t rc = vt_->write != nullptr ? vt_->write(self_, view.get(), &errs, &e) : not_implemented(e, "write");
    if (rc == EX_OK && !ctx.bad_index.empty()) {
      rc = EX_ERR_FATAL;
      set_bad_index_error(e, ctx.bad_index);
    }
    if (st) *st = status_of(rc, e);
    if (rc != EX_OK && !st) throw std::runtime_error("write failed: " + std::string(e.message));
    return rejected;
  }
  sdk::Status prepare_commit() { return simple(vt_->prepare_commit); }
  sdk::Status commit(const std::optional<sdk::Checkpoint>& positions, bool* stored = nullptr) {
    ex_error e = new_error();
    uint32_t flags = 0;
    int32_t rc;
    if (vt_->commit == nullptr) {
      rc = not_implemented(e, "commit");
    } else if (positions) {
      ex_checkpoint cp{sizeof(cp), sdk::bytes(positions->format), sdk::bytes(positions->data)};
      rc = vt_->commit(self_, &cp, &flags, &e);
    } else {
      rc = vt_->commit(self_, nullptr, &flags, &e);
    }
    if (stored) *stored = (flags & EX_SINK_STORED_POSITIONS) != 0;
    return status_of(rc, e);
  }
  sdk::Status abort() { return simple(vt_->abort); }
  // The state changelog calls (ABI 1.1) of a sink that keeps them, as a stage's host
  // forwards them; unsupported when the sink has none.
  sdk::Status state_open(const std::string& store, const sdk::Partition& part, sdk::StateInfo& info) {
    if (vt_->state_open == nullptr) return sdk::Status::unsupported();
    ex_partition p = part.to_abi();
    ex_state_info i{sizeof(i), 0, 0, 0};
    ex_error e = new_error();
    int32_t rc = vt_->state_open(self_, sdk::bytes(store), &p, &i, &e);
    info = sdk::StateInfo{i.start, i.end, i.created != 0};
    return status_of(rc, e);
  }
  // A changelog record as a stateful stage writes it (`value` nullopt: a tombstone).
  sdk::Status state_write(const std::string& store, const sdk::Partition& part, std::string_view key,
                          std::optional<std::string_view> value) {
    if (vt_->state_write == nullptr) return sdk::Status::unsupported();
    ex_partition p = part.to_abi();
    ex_error e = new_error();
    int32_t rc = vt_->state_write(self_, sdk::bytes(store), &p, sdk::bytes(key),
                                  value ? sdk::bytes(*value) : sdk::null_bytes(), &e);
    return status_of(rc, e);
  }
  sdk::Status state_read(const std::string& store, const sdk::Partition& part, int64_t from,
                         const sdk::StateRecordFn& fn) {
    if (vt_->state_read == nullptr) return sdk::Status::unsupported();
    ex_partition p = part.to_abi();
    ex_error e = new_error();
    int32_t rc = vt_->state_read(
        self_, sdk::bytes(store), &p, from,
        [](ex_state_read_ctx ctx, int64_t pos, ex_bytes key, ex_bytes value) -> int32_t {
          try {  // nothing thrown may cross into the plugin (a C boundary)
            return (*reinterpret_cast<const sdk::StateRecordFn*>(ctx))(pos, key, value) ? 0 : 1;
          } catch (...) {
            return 1;
          }
        },
        reinterpret_cast<ex_state_read_ctx>(const_cast<sdk::StateRecordFn*>(&fn)), &e);
    return status_of(rc, e);
  }
  // A new config applied in place (checked against the schema as at create).
  sdk::Status reconfigure(const Library& lib, const std::string& name, const Pairs& config) {
    sdk::Status st = check_before_create(lib, EX_KIND_SINK, name, config);
    if (!st.is_ok()) return st;
    OwnedConfig cfg(lib.component(EX_KIND_SINK, name), config);
    ex_error e = new_error();
    if (vt_->reconfigure == nullptr) return sdk::Status::unsupported();
    return status_of(vt_->reconfigure(self_, cfg.get(), &e), e);
  }
};

}  // namespace exactly::testing
