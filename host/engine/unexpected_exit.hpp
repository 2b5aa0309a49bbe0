// A plugin (or a library it uses) that calls exit() would end the host with the plugin's
// status, 0 included, and without a word: the supervisor would not even restart it. Once
// its pipelines run, the host itself never calls exit() (`run` ends with _Exit), so any
// exit() from then on is someone else's: one line on stderr names who, and the process
// ends with code 4.
#pragma once

namespace exactly::engine {

constexpr int kExitByPlugin = 4;

// Process-wide, once; from then on every exit() is reported and ends with kExitByPlugin.
// `consequence` (a literal) says what the exit cut short, for the command that runs.
void install_unexpected_exit_report(const char* consequence);

}  // namespace exactly::engine
