// The ex_sink_vtable exported for a Sink class: C calls to virtual calls, and the
// storage for the checkpoint open() hands the host (valid until the next call).
// Part of <exactly/sdk.hpp>, which includes it after the public API it adapts: plugin
// authors include sdk.hpp, never this.
#pragma once

#ifndef EXACTLY_SDK_HPP
#error "include <exactly/sdk.hpp>: the headers in exactly/detail/ are its internals"
#endif

#include <exactly/detail/lifecycle.hpp>

#include <memory>
#include <optional>
#include <string>

namespace exactly::sdk::detail {

struct SinkBox {
  std::unique_ptr<Sink> impl;
  Checkpoint stored;
};

template <typename T>
struct SinkAdapter {
  using S = ex_sink_self;
  static int32_t create(const ex_host_api* host, const ex_config* config, S* out,
                        ex_error* err) {
    return create_boxed<SinkBox, T>(host, config, out, err);
  }
  static void destroy(S self) noexcept { detail::destroy<SinkBox>(self); }
  static SinkBox& box(S s) { return *object<SinkBox>(s); }
  static int32_t open(S s, ex_checkpoint* stored, int32_t* has, ex_error* err) {
    return guard(err, [&] {
      auto& b = box(s);
      std::optional<Checkpoint> cp;
      Status st = b.impl->open(cp);
      *has = cp.has_value() ? 1 : 0;
      if (cp) {
        b.stored = *cp;
        stored->struct_size = sizeof(ex_checkpoint);
        stored->format = bytes(b.stored.format);
        stored->data = bytes(b.stored.data);
      }
      return st;
    });
  }
  static int32_t assign(S s, const ex_partition* p, size_t n, ex_error* err) {
    return guard(err, [&] { return box(s).impl->assign(partitions_from(p, n)); });
  }
  static int32_t revoke(S s, const ex_partition* p, size_t n, ex_error* err) {
    return guard(err, [&] { return box(s).impl->revoke(partitions_from(p, n)); });
  }
  static int32_t write(S s, const ex_batch* in, const ex_record_errors* e, ex_error* err) {
    return guard(err, [&] { return box(s).impl->write(Batch(in), RecordErrors(e)); });
  }
  static int32_t prepare_commit(S s, ex_error* err) {
    return guard(err, [&] { return box(s).impl->prepare_commit(); });
  }
  static int32_t commit(S s, const ex_checkpoint* cp, uint32_t* flags, ex_error* err) {
    return guard(err, [&] {
      Checkpoint c;
      const Checkpoint* pc = nullptr;
      if (cp != nullptr) {
        c = Checkpoint::from(cp);
        pc = &c;
      }
      bool stored = false;
      Status st = box(s).impl->commit(pc, stored);
      *flags = stored ? EX_SINK_STORED_POSITIONS : 0u;
      if (stored && box(s).impl->positions_in_source()) *flags |= EX_SINK_POSITIONS_IN_SOURCE;
      return st;
    });
  }
  static int32_t abort(S s, ex_error* err) {
    return guard(err, [&] { return box(s).impl->abort(); });
  }
  static int32_t reconfigure(S s, const ex_config* c, ex_error* err) {
    return guard(err, [&] { return box(s).impl->reconfigure(Config(c)); });
  }
  static std::string str(ex_bytes b) { return std::string(view(b)); }
  static int32_t state_open(S s, ex_bytes store, const ex_partition* p, ex_state_info* info,
                            ex_error* err) {
    return guard(err, [&] {
      StateInfo i;
      Status st = box(s).impl->state_open(str(store), Partition::from(*p), i);
      info->start = i.start;
      info->end = i.end;
      info->created = i.created ? 1 : 0;
      return st;
    });
  }
  static int32_t state_read(S s, ex_bytes store, const ex_partition* p, int64_t from,
                            ex_state_record_fn fn, ex_state_read_ctx fn_ctx, ex_error* err) {
    return guard(err, [&] {
      StateRecordFn cb = [&](int64_t pos, ex_bytes k, ex_bytes v) {
        return fn(fn_ctx, pos, k, v) == 0;
      };
      return box(s).impl->state_read(str(store), Partition::from(*p), from, cb);
    });
  }
  static int32_t state_write(S s, ex_bytes store, const ex_partition* p, ex_bytes key,
                             ex_bytes value, ex_error* err) {
    return guard(err, [&] { return box(s).impl->state_write(str(store), Partition::from(*p), key, value); });
  }
  static int64_t state_position(S s, ex_bytes store, const ex_partition* p) noexcept {
    try {
      return box(s).impl->state_position(str(store), Partition::from(*p));
    } catch (...) {
      return -1;
    }
  }
  static int32_t completed(S s, ex_partition* p, size_t n, const ex_record_errors* e,
                           ex_error* err) {
    return guard(err, [&] {
      auto parts = partitions_from(p, n);
      Status st = static_cast<T&>(*box(s).impl).completed(parts, RecordErrors(e));
      for (size_t i = 0; i < n && i < parts.size(); ++i)
        if (parts[i].start_offset < p[i].start_offset) p[i].start_offset = parts[i].start_offset;
      return st;
    });
  }
  static constexpr auto completed_fn() {
    if constexpr (HasCompleted<T>) return &completed;
    else return static_cast<decltype(&completed)>(nullptr);
  }
  static const ex_sink_vtable* vtable() {
    static const ex_sink_vtable vt = {sizeof(ex_sink_vtable), &create, &destroy, &open,
                                      &assign, &revoke, &write, &prepare_commit, &commit,
                                      &abort, &reconfigure, &state_open, &state_read,
                                      &state_write, &state_position, validate_fn<T>(),
                                      completed_fn()};
    return &vt;
  }
};

}  // namespace exactly::sdk::detail
