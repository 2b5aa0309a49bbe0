// create/destroy/validate exported for every component kind: the plugin object behind
// an opaque handle (ex_source_self, ...), its construction from (Host, Config), and the
// optional static validate (ABI 1.3).
// Part of <exactly/sdk.hpp>, which includes it after the public API it adapts: plugin
// authors include sdk.hpp, never this.
#pragma once

#ifndef EXACTLY_SDK_HPP
#error "include <exactly/sdk.hpp>: the headers in exactly/detail/ are its internals"
#endif

#include <exactly/detail/guard.hpp>

#include <concepts>
#include <memory>

namespace exactly::sdk::detail {

// The object behind a plugin handle (ex_source_self, ...), and back.
template <typename T, typename Handle>
T* object(Handle h) {
  return reinterpret_cast<T*>(h);
}
template <typename Handle, typename T>
Handle handle(T* p) {
  return reinterpret_cast<Handle>(p);
}

template <typename Base, typename T, typename Handle>
int32_t create(const ex_host_api* host, const ex_config* config, Handle* out, ex_error* err) {
  return guard(err, [&] {
    Config cfg(config);
    *out = handle<Handle>(static_cast<Base*>(new T(Host(host), cfg)));
    return Status::ok();
  });
}

template <typename Base, typename Handle>
void destroy(Handle self) noexcept {
  try {
    delete object<Base>(self);
  } catch (...) {
  }
}

// Sources and sinks live in a box that also holds memory handed across the ABI.
template <typename Box, typename T, typename Handle>
int32_t create_boxed(const ex_host_api* host, const ex_config* config, Handle* out,
                     ex_error* err) {
  return guard(err, [&] {
    auto box = std::make_unique<Box>();
    box->impl = std::make_unique<T>(Host(host), Config(config));
    *out = handle<Handle>(box.release());
    return Status::ok();
  });
}

// A component class may declare `static sdk::Status validate(const sdk::Config&)` (ABI
// 1.3): the checks create() makes, without creating anything. The adapters export it, or
// NULL when the class has none (the host then checks the schema only).
template <typename T>
concept HasValidate = requires(const Config& c) {
  { T::validate(c) } -> std::same_as<Status>;
};

template <typename T>
int32_t validate(const ex_config* config, ex_error* err) noexcept {
  return guard(err, [&] { return T::validate(Config(config)); });
}

template <typename T>
constexpr int32_t (*validate_fn())(const ex_config*, ex_error*) {
  if constexpr (HasValidate<T>) return &validate<T>;
  else return nullptr;
}

// ABI 1.4, detected like validate (NULL when the class has none): a source's
// `Status checkpoint_at(const std::vector<Partition>&, Checkpoint&)` and a sink's
// `Status completed(std::vector<Partition>&, const RecordErrors&)` (ordered completion
// window: lower each start_offset to the partition's lowest incomplete record).
template <typename T>
concept HasCheckpointAt = requires(T& t, const std::vector<Partition>& p, Checkpoint& c) {
  { t.checkpoint_at(p, c) } -> std::same_as<Status>;
};
template <typename T>
concept HasCompleted = requires(T& t, std::vector<Partition>& p, const RecordErrors& e) {
  { t.completed(p, e) } -> std::same_as<Status>;
};

}  // namespace exactly::sdk::detail
