// exactly: a plugin host for exactly-once pipelines. See README.md.
#include "cli/commands.hpp"

#include <exactly/plugin_abi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  using namespace exactly::cli;
  if (argc < 2) {
    print_usage();
    return 2;
  }
  std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    print_usage();
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::printf("exactly %s (plugin ABI %u.%u)\n", EXACTLY_VERSION, EX_ABI_VERSION_MAJOR, EX_ABI_VERSION_MINOR);
    return 0;
  }
  if (cmd == "run") return cmd_run(args);
  if (cmd == "validate") return cmd_validate(args);
  if (cmd == "plugins") return cmd_plugins(args);
  if (cmd == "test") return cmd_test(args);
  std::fprintf(stderr, "exactly: unknown command '%s'\n\n", cmd.c_str());
  print_usage();
  return 2;
}
