// The ex_transform_vtable exported for a Transform class: C calls to virtual calls.
// Part of <exactly/sdk.hpp>, which includes it after the public API it adapts: plugin
// authors include sdk.hpp, never this.
#pragma once

#ifndef EXACTLY_SDK_HPP
#error "include <exactly/sdk.hpp>: the headers in exactly/detail/ are its internals"
#endif

#include <exactly/detail/lifecycle.hpp>

namespace exactly::sdk::detail {

template <typename T>
struct TransformAdapter {
  using S = ex_transform_self;
  static Transform* self(S s) { return object<Transform>(s); }
  static int32_t assign(S s, const ex_partition* p, size_t n, ex_error* err) {
    return guard(err, [&] { return self(s)->assign(partitions_from(p, n)); });
  }
  static int32_t revoke(S s, const ex_partition* p, size_t n, ex_error* err) {
    return guard(err, [&] { return self(s)->revoke(partitions_from(p, n)); });
  }
  static int32_t process(S s, const ex_batch* in, const ex_emitter* out, ex_error* err) {
    return guard(err, [&] { return self(s)->process(Batch(in), Emitter(out)); });
  }
  static int32_t prepare_commit(S s, ex_error* err) {
    return guard(err, [&] { return self(s)->prepare_commit(); });
  }
  static int32_t commit(S s, ex_error* err) {
    return guard(err, [&] { return self(s)->commit(); });
  }
  static int32_t abort(S s, ex_error* err) {
    return guard(err, [&] { return self(s)->abort(); });
  }
  static int32_t reconfigure(S s, const ex_config* c, ex_error* err) {
    return guard(err, [&] { return self(s)->reconfigure(Config(c)); });
  }
  static int32_t positions(S s, const ex_partition* p, size_t n, ex_error* err) {
    return guard(err, [&] { return self(s)->positions(partitions_from(p, n)); });
  }
  static int32_t standby(S s, const ex_partition* p, size_t n, ex_error* err) {
    return guard(err, [&] { return self(s)->standby(partitions_from(p, n)); });
  }
  static const ex_transform_vtable* vtable() {
    static const ex_transform_vtable vt = {
        sizeof(ex_transform_vtable), &detail::create<Transform, T, S>,
        &detail::destroy<Transform, S>,
        &assign, &revoke, &process, &prepare_commit, &commit, &abort, &reconfigure, &positions,
        &standby, validate_fn<T>()};
    return &vt;
  }
};

}  // namespace exactly::sdk::detail
