// exactly: a plugin host for exactly-once pipelines. See README.md.
#include "cli/commands.hpp"
#include "util/malloc_tuning.hpp"

int main(int argc, char** argv) {
  // Before any thread or plugin allocates (see malloc_tuning.hpp for why).
  (void)exactly::util::keep_freed_memory();
  return exactly::cli::dispatch(argc, argv);
}
