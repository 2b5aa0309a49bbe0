// The ex_source_vtable exported for a Source class: C calls to virtual calls, and
// the storage for the batch and checkpoint a source hands the host (LIFETIME in
// plugin_abi.h: until the next poll / the next call).
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
#include <vector>

namespace exactly::sdk::detail {

// Per-instance storage for source batches and checkpoints that must outlive the call.
struct SourceBox {
  std::unique_ptr<Source> impl;
  std::vector<ex_record> batch;
  Checkpoint cp;
  std::string fmt, data;
};

template <typename T>
struct SourceAdapter {
  using S = ex_source_self;
  static int32_t create(const ex_host_api* host, const ex_config* config, S* out,
                        ex_error* err) {
    return create_boxed<SourceBox, T>(host, config, out, err);
  }
  static void destroy(S self) noexcept { detail::destroy<SourceBox>(self); }
  static SourceBox& box(S s) { return *object<SourceBox>(s); }
  static int32_t open(S s, const ex_checkpoint* resume, ex_error* err) {
    return guard(err, [&] {
      std::optional<Checkpoint> r;
      if (resume != nullptr) r = Checkpoint::from(resume);
      return box(s).impl->open(r);
    });
  }
  static int32_t poll(S s, int32_t timeout_ms, ex_batch* out, int32_t* eoi, ex_error* err) {
    return guard(err, [&] {
      auto& b = box(s);
      b.batch.clear();
      bool end = false;
      Status st = b.impl->poll(timeout_ms, b.batch, end);
      *eoi = end ? 1 : 0;
      out->struct_size = sizeof(ex_batch);
      out->record_size = sizeof(ex_record);
      out->records = b.batch.data();
      out->count = b.batch.size();
      return st;
    });
  }
  static int32_t checkpoint(S s, ex_checkpoint* out, ex_error* err) {
    return guard(err, [&] {
      auto& b = box(s);
      Status st = b.impl->checkpoint(b.cp);
      out->struct_size = sizeof(ex_checkpoint);
      out->format = bytes(b.cp.format);
      out->data = bytes(b.cp.data);
      return st;
    });
  }
  static int32_t commit(S s, const ex_checkpoint* cp, ex_error* err) {
    return guard(err, [&] { return box(s).impl->commit(Checkpoint::from(cp)); });
  }
  static int32_t rewind(S s, const ex_checkpoint* cp, ex_error* err) {
    return guard(err, [&] { return box(s).impl->rewind(Checkpoint::from(cp)); });
  }
  static int32_t pause(S s, int32_t paused, ex_error* err) {
    return guard(err, [&] { return box(s).impl->pause(paused != 0); });
  }
  static int32_t reconfigure(S s, const ex_config* c, ex_error* err) {
    return guard(err, [&] { return box(s).impl->reconfigure(Config(c)); });
  }
  static int32_t pause_partitions(S s, const ex_partition* p, size_t n, int32_t paused,
                                  ex_error* err) {
    return guard(err, [&] { return box(s).impl->pause_partitions(partitions_from(p, n), paused != 0); });
  }
  static int32_t checkpoint_at(S s, const ex_partition* p, size_t n, ex_checkpoint* out,
                               ex_error* err) {
    return guard(err, [&] {
      auto& b = box(s);
      Status st = static_cast<T&>(*b.impl).checkpoint_at(partitions_from(p, n), b.cp);
      out->struct_size = sizeof(ex_checkpoint);
      out->format = bytes(b.cp.format);
      out->data = bytes(b.cp.data);
      return st;
    });
  }
  static constexpr auto checkpoint_at_fn() {
    if constexpr (HasCheckpointAt<T>) return &checkpoint_at;
    else return static_cast<decltype(&checkpoint_at)>(nullptr);
  }
  static const ex_source_vtable* vtable() {
    static const ex_source_vtable vt = {sizeof(ex_source_vtable), &create, &destroy, &open,
                                        &poll, &checkpoint, &commit, &rewind, &pause,
                                        &reconfigure, &pause_partitions, validate_fn<T>(),
                                        checkpoint_at_fn()};
    return &vt;
  }
};

}  // namespace exactly::sdk::detail
