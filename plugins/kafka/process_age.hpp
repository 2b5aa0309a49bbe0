// How long this process has run, for texts that read differently right after a start
// (a fenced producer: kafka_sink.cpp).
#pragma once

namespace exactly::kafka {

// Seconds since the process started (from /proc), or a negative value when unknown.
double process_age_seconds();

}  // namespace exactly::kafka
