#pragma once
// The host's own keys: a pipeline entry's and a file's top level. Checked like a
// plugin's schema and listed in the config reference (`exactly plugins --markdown`).
#include "plugin/loader.hpp"

#include <vector>

namespace exactly::config {

const std::vector<plugin::Field>& pipeline_fields();
const std::vector<plugin::Field>& file_fields();

}  // namespace exactly::config
