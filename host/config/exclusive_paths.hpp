#pragma once
// Keys a plugin declares EX_CFG_EXCLUSIVE_PATH (ABI 1.6): the path of a file one of its
// components holds alone. Two components of the same plugin and kind whose values name
// the same file are refused when the config loads, naming both places: before, the
// second failed only at open, after `exactly validate` had passed (QA: two pipelines
// with one dead-letter file).
#include "config/model.hpp"

#include <vector>

namespace exactly::config {

void check_exclusive_paths(const HostSpec& spec, std::vector<Diagnostic>& errors);

}  // namespace exactly::config
