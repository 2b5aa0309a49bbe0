#pragma once

#include <algorithm>
#include <chrono>

namespace exactly::engine {

// How long a round gathers records before it commits. commit.interval is the time from
// one commit's start to the next, so the round after a commit that took `last_commit`
// gathers for the rest of the interval: with 100 ms commits a record waits for at most
// one interval plus one commit, not one interval plus two (the round used to start its
// interval only once the previous commit had finished).
//
// It gathers at least as long as commits *typically* take (`typical_commit`, a moving
// average; up to the interval), so that slow commits cannot shrink rounds to a batch
// each: under commits that stay slow the pipeline still spends at least half its time
// processing. A single slow commit (a broker's writeback burst, a descheduled moment)
// does not stretch the next round by itself: the records that waited through it, already
// old when polled, go out after a short round instead of a whole interval. That was the
// tail of the end-to-end latency (docs/benchmarks.md, "Record ages").
template <class Duration>
Duration round_length(Duration interval, Duration last_commit, Duration typical_commit) {
  if (last_commit <= Duration::zero()) return interval;
  return std::max(interval - last_commit, std::min(typical_commit, interval));
}

// The moving average round_length() takes: each commit weighs 1/8, so a lasting change
// is followed within a few rounds and a single outlier moves it by an eighth.
template <class Duration>
Duration next_typical_commit(Duration typical, Duration last_commit) {
  if (typical <= Duration::zero()) return last_commit;
  return typical - typical / 8 + last_commit / 8;
}

// A round also ends early once its oldest record has waited `interval` since its
// timestamp (`oldest_due` = that timestamp + interval, on the round's clock): input that
// arrives late (a broker or producer stall upstream: the records are old when polled)
// then waits for a short round instead of a whole one, which is what made the tail of
// the end-to-end latency. Never before `min_round` (round_min_length()), so that old
// input (a replay, a catch-up) cannot shrink rounds to nothing; and input of normal age
// keeps the cadence, as its records reach that age about when the interval ends anyway.
template <class TimePoint, class Duration>
TimePoint round_end(TimePoint start, Duration round_len, Duration min_round,
                    const TimePoint* oldest_due) {
  const TimePoint by_cadence = start + round_len;
  if (oldest_due == nullptr || *oldest_due >= by_cadence) return by_cadence;
  return std::max(start + std::min(min_round, round_len), *oldest_due);
}

// Input whose newest record is already this old when polled is a backlog being read (a
// restart, a rebalance's takeover, a replay, a pipeline slower than its input), not input
// that a stall upstream delayed for a moment (a broker's GC pause or writeback burst: 0.1-1
// s in docs/benchmarks.md). Its records are all late; ending rounds early for them (above)
// would not make them less late, and each commit it adds stops the pipeline for as long
// as the commit takes, so every record behind would come out later: a 2M-record catch-up
// at a 1 s interval committed 11-13 times instead of 4-5 and ran 2-18% slower
// (docs/benchmarks.md, "Rounds through a backlog"). Through a backlog a round keeps the
// cadence; rounds end early again once a batch's newest record is younger than this.
// Twice the interval, because only records older than the interval end rounds early.
template <class Duration>
Duration backlog_age(Duration interval) {
  return std::max(2 * interval, Duration(std::chrono::seconds(2)));
}

// The shortest round round_end() allows: a quarter of the interval, and twice the typical
// commit (the pipeline processes at least two thirds of its time), up to the interval.
template <class Duration>
Duration round_min_length(Duration interval, Duration typical_commit) {
  return std::min(interval, std::max(2 * typical_commit, interval / 4));
}

}  // namespace exactly::engine
