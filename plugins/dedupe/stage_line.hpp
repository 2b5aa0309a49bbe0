// A line a stage says once, not once per task: a pipeline with several tasks makes one
// transform instance per task, each with the same settings, and a line per instance read
// like a stage that had started (or been reloaded) several times.
#pragma once

#include <exactly/sdk.hpp>

#include <string>

namespace exactly::dedupe {

// Logs `text` at info unless this pipeline's stage last said the same text under `what`;
// a changed text (a reload that changes it) is said again.
void say_once_per_stage(const sdk::Host& host, const char* what, const std::string& text);

}  // namespace exactly::dedupe
