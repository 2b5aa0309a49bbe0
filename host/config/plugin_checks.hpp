#pragma once
// A component's own check of its settings (ABI 1.3 `validate`): what create() would refuse,
// found while loading the config, so `exactly validate`, start and reload all refuse it
// with file:line:col before anything is created.
#include "config/model.hpp"

#include <string>
#include <vector>

namespace exactly::config {

// Runs the component's validate on its normalised values: nothing when it accepts them
// or has none (a plugin built for ABI 1.2 or older: the schema check is all there is),
// else its errors, the first and then each further one found with the refused keys left
// out. `context` is the "pipeline 'p' source" prefix of the loader's messages.
std::vector<Diagnostic> check_with_plugin(const ComponentSpec& spec, const std::string& pipeline,
                                          const std::string& context);

}  // namespace exactly::config
