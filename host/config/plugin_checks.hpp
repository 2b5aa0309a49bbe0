#pragma once
// A component's own check of its settings (ABI 1.3 `validate`): what create() would refuse,
// found while loading the config, so `exactly validate`, start and reload all refuse it
// with file:line:col before anything is created.
#include "config/model.hpp"

#include <optional>
#include <string>

namespace exactly::config {

// Runs the component's validate on its normalised values; nullopt when it accepts them
// or has none (a plugin built for ABI 1.2 or older: the schema check is all there is).
// `context` is the "pipeline 'p' source" prefix of the loader's messages.
std::optional<Diagnostic> check_with_plugin(const ComponentSpec& spec, const std::string& pipeline,
                                            const std::string& context);

}  // namespace exactly::config
