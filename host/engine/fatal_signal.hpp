// When a plugin (or the host) dies of SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT, one line
// on stderr says which pipeline, stage and library were running, so that a supervisor's
// log (journald, kubectl logs) names the culprit instead of only "exit 139".
#pragma once

#include "engine/plugin_call.hpp"

namespace exactly::engine {

// Installs the handlers (process-wide, once). The report is written with write(2) only.
void install_fatal_signal_report();

// Gives the calling thread an alternate signal stack, so that a stack overflow in a plugin
// is reported too. Call once at the start of each thread that runs plugin code.
void use_alternate_signal_stack();

}  // namespace exactly::engine
