// The `reroute` outcomes of a class (when.fused, when.limited): instead of rejecting its
// records (open fuse) or holding them in the sink (over its rate), the dispatcher hands
// them back not delivered, marked for the retry topic with the time they could go
// (Request::later_at); the sink then re-enqueues them (requeue.hpp). The rest of the
// batch, and every other class, goes on.
#include "dispatcher.hpp"

namespace exactly::http {

namespace {

void defer(Request& r, Request::Later why, Clock::time_point at, std::string reason,
           size_t& remaining) {
  r.done = true;
  r.delivered = false;
  r.later = why;
  r.later_at = at;
  r.reason = std::move(reason);  // used only if the retry topic cannot take it
  --remaining;
}

}  // namespace

void Dispatcher::reroute_fused(std::deque<size_t>& q, std::vector<Request>& reqs, RateClass& c,
                               Clock::time_point now, size_t& remaining) {
  // An automatic fuse half-opens at open_until; one opened by hand is looked at again
  // after its cool-down.
  Clock::time_point at = c.fuse.manual() ? now + c.fuse.cooldown() : c.fuse.open_until();
  for (size_t id : q)
    defer(reqs[id], Request::Later::fused, at,
          "fuse open for class '" + c.name + "' (rerouted, not sent)", remaining);
  q.clear();
}

void Dispatcher::reroute_limited(std::deque<size_t>& q, std::vector<Request>& reqs, RateClass& c,
                                 Clock::time_point turn, Clock::time_point now, const Settings& s,
                                 size_t& remaining) {
  // The k-th waiting record's turn is `turn` + k / rate: those due within
  // reroute.wait.max wait here, the later ones leave with that turn as their not-before
  // time, so that they come back spread at the class's rate rather than all at once.
  const auto wait_max = std::chrono::milliseconds(s.reroute_wait_max_ms);
  const double rate = c.bucket.rate();
  size_t keep = 0;
  while (keep < q.size()) {
    auto at = turn;
    if (rate > 0)
      at += std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(static_cast<double>(keep) / rate));
    if (at - now > wait_max) break;
    ++keep;
  }
  for (size_t k = keep; k < q.size(); ++k) {
    auto at = turn;
    if (rate > 0)
      at += std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(static_cast<double>(k) / rate));
    defer(reqs[q[k]], Request::Later::limited, at,
          "class '" + c.name + "' over its rate (rerouted, not sent)", remaining);
  }
  q.resize(keep);
}

}  // namespace exactly::http
