#pragma once
// The subcommands, each taking its options already parsed and checked by
// command_line.cpp; each returns the process exit code.
#include <string>
#include <vector>

namespace exactly::cli {

struct RunOptions {
  std::vector<std::string> paths;
  bool watch = true;
};

struct PluginsOptions {
  bool json = false;
  bool markdown = false;
  std::vector<std::string> dirs;  // --plugin-path, each an existing directory
};

int cmd_run(const RunOptions& opts);
// stage_timeout_ms: how long a plugin's validate() may run before the check gives up.
int cmd_validate(const std::vector<std::string>& paths, int64_t stage_timeout_ms = 60000);
int cmd_plugins(const PluginsOptions& opts);
int cmd_test(const std::vector<std::string>& files);
void print_usage();

// Parses argv (command_line.cpp) and runs the subcommand it names: `exactly`'s main.
int dispatch(int argc, char** argv);

}  // namespace exactly::cli
