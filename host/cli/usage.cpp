#include "cli/commands.hpp"

#include <cstdio>

namespace exactly::cli {

void print_usage() {
  std::printf(
      "exactly — exactly-once pipelines from plugins\n"
      "\n"
      "usage:\n"
      "  exactly run PATH... [--log-level debug|info|warn|error] [--log-format text|json]\n"
      "              [--no-watch]\n"
      "      run the pipelines in the YAML files / directories; stops on SIGINT/SIGTERM after\n"
      "      committing the running round; prints a summary at the end; the log on stderr\n"
      "      as text lines or one JSON object per line\n"
      "  exactly validate PATH... [--stage-timeout DURATION]\n"
      "      check files without running; exit 2 with file:line:col messages on error, or\n"
      "      when a plugin's validate() has not returned after DURATION (default 60s)\n"
      "  exactly plugins [--json | --markdown] [--plugin-path DIR]...\n"
      "      list components found on the plugin path with their config schema (a\n"
      "      relative DIR is relative to the working directory)\n"
      "  exactly test PIPELINE.yaml...\n"
      "      run each pipeline's transforms over the cases in PIPELINE.test.yaml beside it\n"
      "      and compare what comes out; no broker; exit 1 on a mismatch\n"
      "  exactly --version | --help\n"
      "  exactly COMMAND --help\n"
      "      the command's options; a value may follow its option after '=' or a space\n"
      "\n"
      "plugin path: plugin.path in the files, $EXACTLY_PLUGIN_PATH, <bin>/plugins,\n"
      "<bin>/../lib/exactly/plugins\n");
}

}  // namespace exactly::cli
