// exactly: a plugin host for exactly-once pipelines. See README.md.
#include "cli/commands.hpp"

int main(int argc, char** argv) { return exactly::cli::dispatch(argc, argv); }
