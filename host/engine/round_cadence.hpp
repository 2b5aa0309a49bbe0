#pragma once

#include <algorithm>
#include <chrono>

namespace exactly::engine {

// How long a round gathers records after a commit that took `last_commit`.
//
// commit.interval is the time from one commit's start to the next, so the round may end
// once the rest of the interval has passed (`cadence`): with 100 ms commits a record waits
// for at most about one interval plus one commit, not one interval plus two.
//
// While the source still has records ready, the round goes on until it has gathered as
// long as that commit took (up to the interval, `longest`): a catching-up pipeline whose
// commits are slow never spends more time committing than processing. A source with
// nothing ready ends the round at `cadence`, so after a commit that a broker stall made
// long, what arrived during it is committed as soon as it is processed instead of waiting
// for one more interval. Either way commits start at least an interval apart.
template <class Duration>
struct RoundSpan {
  Duration cadence;
  Duration longest;
};

template <class Duration>
RoundSpan<Duration> round_span(Duration interval, Duration last_commit) {
  if (last_commit <= Duration::zero()) return {interval, interval};
  const Duration rest = std::max(interval - last_commit, Duration::zero());
  return {rest, std::max(rest, std::min(last_commit, interval))};
}

}  // namespace exactly::engine
