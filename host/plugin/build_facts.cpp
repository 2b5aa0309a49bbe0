#include "plugin/build_facts.hpp"

#include <cstddef>
#include <fmt/format.h>

namespace exactly::plugin {

namespace {

struct Fact {
  const char* name;
  uint32_t ex_plugin_descriptor::*member;
  uint32_t host;
  // A struct that carries struct_size and may grow at its end in a minor
  // (docs/abi-policy.md): a plugin built with a smaller one reads only its prefix.
  bool may_be_smaller = false;
};

const Fact kFacts[] = {
    {"pointer size", &ex_plugin_descriptor::pointer_size, sizeof(void*)},
    {"byte order mark", &ex_plugin_descriptor::byte_order, EX_BYTE_ORDER_MARK},
    {"sizeof(ex_record)", &ex_plugin_descriptor::record_size, sizeof(ex_record)},
    {"sizeof(ex_batch)", &ex_plugin_descriptor::batch_size, sizeof(ex_batch), true},
    {"sizeof(ex_partition)", &ex_plugin_descriptor::partition_size, sizeof(ex_partition)},
    {"sizeof(ex_header)", &ex_plugin_descriptor::header_size, sizeof(ex_header)},
    {"sizeof(ex_config_entry)", &ex_plugin_descriptor::config_entry_size, sizeof(ex_config_entry)},
};

constexpr uint32_t kFactsEnd =
    offsetof(ex_plugin_descriptor, config_entry_size) + sizeof(uint32_t);

std::string shown(const Fact& f, uint32_t v) {
  return f.member == &ex_plugin_descriptor::byte_order ? fmt::format("{:#010x}", v)
                                                        : std::to_string(v);
}

}  // namespace

std::string build_fact_mismatch(const ex_plugin_descriptor& d) {
  const uint32_t minor = d.abi_version & 0xffffu;
  if (d.struct_size < kFactsEnd) {
    if (minor < 4) return "";  // built before the facts existed
    return fmt::format("its descriptor ({} bytes) lacks the build facts every plugin built for "
                       "ABI 1.4 or later states (rebuild it against this SDK; a hand-written "
                       "descriptor ends with EX_PLUGIN_BUILD_FACTS)",
                       d.struct_size);
  }
  for (const Fact& f : kFacts) {
    uint32_t v = d.*f.member;
    if (v == f.host || (f.may_be_smaller && v != 0 && v < f.host)) continue;
    if (v == 0)
      return fmt::format("its descriptor does not state its {} (0): a plugin built for ABI 1.4 "
                         "or later fills the build facts (EX_PLUGIN_BUILD_FACTS after "
                         "component_count)",
                         f.name);
    return fmt::format("built with {} {}, this host has {}: the plugin was built for another "
                       "platform or against an edited plugin_abi.h; rebuild it against this "
                       "host's SDK",
                       f.name, shown(f, v), shown(f, f.host));
  }
  return "";
}

}  // namespace exactly::plugin
