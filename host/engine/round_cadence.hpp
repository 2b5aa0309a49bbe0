#pragma once

#include <algorithm>
#include <chrono>

namespace exactly::engine {

// How long a round gathers records before it commits. commit.interval is the time from
// one commit's start to the next, so the round after a commit that took `last_commit`
// gathers for the rest of the interval: with 100 ms commits a record waits for at most
// one interval plus one commit, not one interval plus two (the round used to start its
// interval only once the previous commit had finished). It gathers at least as long as
// that commit took (up to the interval), so that slow commits cannot shrink rounds to a
// batch each: the pipeline spends at least half its time processing, and with commits
// longer than the interval it behaves as before.
template <class Duration>
Duration round_length(Duration interval, Duration last_commit) {
  if (last_commit <= Duration::zero()) return interval;
  return std::max(interval - last_commit, std::min(last_commit, interval));
}

}  // namespace exactly::engine
