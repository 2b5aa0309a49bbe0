// The `reroute` outcomes of a class (when.fused, when.limited): instead of rejecting its
// records (open fuse) or holding them in the sink (over its rate), the dispatcher hands
// them back not delivered, marked for the retry topic with the time they could go
// (Request::later_at), as final outcomes of the completion window; the sink's
// completed() then re-enqueues them (requeue.hpp) on the pipeline thread. The rest of the
// batch, and every other class, goes on.
#include "dispatcher.hpp"

namespace exactly::http {

namespace {

void defer(Request& r, Request::Later why, Clock::time_point at, std::string reason) {
  r.done = true;
  r.delivered = false;
  r.later = why;
  r.later_at = at;
  r.reason = std::move(reason);  // used only if the retry topic cannot take it
}

}  // namespace

void Dispatcher::reroute_fused(std::deque<Request*>& q, RateClass& c, Clock::time_point now,
                               const Done& done) {
  // An automatic fuse half-opens at open_until; one opened by hand is looked at again
  // after its cool-down.
  Clock::time_point at = c.fuse.manual() ? now + c.fuse.cooldown() : c.fuse.open_until();
  while (!q.empty()) {
    Request& r = *q.front();
    q.pop_front();
    defer(r, Request::Later::fused, at, "fuse open for class '" + c.name + "' (rerouted, not sent)");
    --pending_;
    done(r);
  }
}

void Dispatcher::reroute_limited(std::deque<Request*>& q, RateClass& c, Clock::time_point turn,
                                 Clock::time_point now, const Settings& s, const Done& done) {
  // The k-th waiting record's turn is `turn` + k / rate: those due within
  // reroute.wait.max wait here, the later ones leave with that turn as their not-before
  // time, so that they come back spread at the class's rate rather than all at once.
  const auto wait_max = std::chrono::milliseconds(s.reroute_wait_max_ms);
  const double rate = c.limit->rate();
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
    Request& r = *q[k];
    defer(r, Request::Later::limited, at, "class '" + c.name + "' over its rate (rerouted, not sent)");
    --pending_;
    done(r);
  }
  q.resize(keep);
}

}  // namespace exactly::http
