#include "dispatcher.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>

namespace exactly::http {

namespace {
int ms_until(Clock::time_point now, Clock::time_point t) {
  if (t <= now) return 0;
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(t - now).count();
  return static_cast<int>(std::min<int64_t>((us + 999) / 1000, 1000));
}
}  // namespace

Dispatcher::Dispatcher() {
  multi_ = curl_multi_init();
  if (multi_ == nullptr) throw std::runtime_error("curl_multi_init failed");
}

Dispatcher::~Dispatcher() {
  for (auto& s : slots_) {
    if (s.req != nullptr) curl_multi_remove_handle(multi_, s.easy);
    curl_easy_cleanup(s.easy);
  }
  curl_multi_cleanup(multi_);
}

size_t Dispatcher::on_body(char* p, size_t size, size_t n, void* userdata) {
  auto* slot = static_cast<Slot*>(userdata);
  size_t len = size * n;
  std::string& out = slot->req->response;
  if (out.size() < slot->max_body) out.append(p, std::min(len, slot->max_body - out.size()));
  return len;  // the rest is read and dropped: the connection stays reusable
}

void Dispatcher::start(Slot& slot, Request& r, const Settings& s) {
  CURL* e = slot.easy;
  curl_easy_reset(e);
  slot.req = &r;
  slot.max_body = s.response_max;
  slot.error[0] = '\0';
  r.response.clear();
  ++r.attempts;
  curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(e, CURLOPT_PRIVATE, &slot);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, r.headers);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Dispatcher::on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &slot);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, slot.error);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(s.connect_timeout_ms));
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(s.request_timeout_ms));
  if (!s.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, s.ca_file.c_str());
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, s.tls_verify ? 1L : 0L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, s.tls_verify ? 2L : 0L);
  if (s.method == "GET") {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else if (s.method == "DELETE") {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
  } else {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body.empty() ? "" : r.body.data());
    if (s.method != "POST") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, s.method.c_str());
  }
  curl_multi_add_handle(multi_, e);
  ++in_flight_;
}

void Dispatcher::fail(Request& r, RateClass& c, std::string reason, size_t& remaining,
                      bool downstream) {
  r.done = true;
  r.delivered = false;
  r.reason = std::move(reason);
  if (downstream) ++c.failures;
  --remaining;
}

namespace {
std::string final_reason(const Request& r, const Settings& s) {
  std::string m = r.last.what + " after " + std::to_string(r.attempts) + " attempt(s): " +
                  s.method + " " + r.url;
  if (!r.response.empty()) m += "; response: " + r.response;
  return m;
}
}  // namespace

void Dispatcher::finish(Slot& slot, CURLcode code, RateClasses& classes, const Settings& s,
                        std::vector<size_t>& delayed, std::vector<Request>& reqs,
                        size_t& remaining) {
  Request& r = *slot.req;
  slot.req = nullptr;
  --in_flight_;
  long status = 0;
  curl_off_t retry_after = 0;
  curl_easy_getinfo(slot.easy, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(slot.easy, CURLINFO_RETRY_AFTER, &retry_after);
  r.status = status;
  r.last = classify(code, status, static_cast<int64_t>(retry_after), slot.error);
  RateClass& c = classes[r.cls];
  ++c.requests;
  bool was_probe = r.probe;
  r.probe = false;
  auto now = Clock::now();
  if (r.last.unhealthy)
    c.fuse.on_failure(now, was_probe);
  else
    c.fuse.on_answer();
  switch (r.last.verdict) {
    case Outcome::Verdict::delivered:
      r.done = true;
      r.delivered = true;
      ++c.ok;
      --remaining;
      return;
    case Outcome::Verdict::fail:
      fail(r, c, final_reason(r, s), remaining);
      return;
    case Outcome::Verdict::retry:
      break;
  }
  std::chrono::milliseconds delay{0};
  if (r.last.retry_after_ms >= 0) {
    // The downstream named a time: the whole class waits, not only this record.
    delay = std::chrono::milliseconds(std::min(r.last.retry_after_ms, s.retry_after_max_ms));
    c.paused_until = std::max(c.paused_until, now + delay);
  }
  if (r.attempts > s.retry_max) {
    // With a retry topic it may not be final: requeue.cpp counts it if it is.
    fail(r, c, final_reason(r, s), remaining, !s.retry_topic.on());
    r.later = Request::Later::failed;
    return;
  }
  if (r.last.retry_after_ms < 0) delay = backoff(r.attempts, s.backoff_initial_ms, s.backoff_max_ms, rng_);
  r.not_before = now + delay;
  ++c.retries;
  delayed.push_back(static_cast<size_t>(&r - reqs.data()));
}

void Dispatcher::abandon() {
  for (auto& slot : slots_)
    if (slot.req != nullptr) {
      curl_multi_remove_handle(multi_, slot.easy);
      slot.req = nullptr;
    }
  in_flight_ = 0;
}

void Dispatcher::run(std::vector<Request>& reqs, RateClasses& classes, const Settings& s,
                     const std::function<void()>& tick) {
  try {
    run_batch(reqs, classes, s, tick);
  } catch (...) {
    // Transfers still point at this batch's requests: cut them loose before it goes.
    abandon();
    throw;
  }
}

void Dispatcher::run_batch(std::vector<Request>& reqs, RateClasses& classes, const Settings& s,
                           const std::function<void()>& tick) {
  while (slots_.size() < static_cast<size_t>(s.max_in_flight)) {
    Slot slot;
    slot.easy = curl_easy_init();
    if (slot.easy == nullptr) throw std::runtime_error("curl_easy_init failed");
    slots_.push_back(slot);
  }
  if (max_conns_ != s.max_in_flight) {
    // Keep one idle connection per possible in-flight request for the next batch.
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(s.max_in_flight));
    max_conns_ = s.max_in_flight;
  }
  std::vector<Slot*> free;
  for (size_t i = 0; i < static_cast<size_t>(s.max_in_flight); ++i)
    if (slots_[i].req == nullptr) free.push_back(&slots_[i]);

  const size_t n = classes.size();
  std::vector<std::deque<size_t>> ready(n);
  std::vector<size_t> delayed;
  size_t remaining = 0;
  for (size_t i = 0; i < reqs.size(); ++i)
    if (!reqs[i].done) {
      ready[reqs[i].cls].push_back(i);
      ++remaining;
    }
  size_t rr = 0;
  auto last_tick = Clock::now();
  while (remaining > 0) {
    auto now = Clock::now();
    for (size_t k = 0; k < delayed.size();) {
      Request& r = reqs[delayed[k]];
      if (r.not_before <= now) {
        ready[r.cls].push_back(delayed[k]);
        delayed[k] = delayed.back();
        delayed.pop_back();
      } else {
        ++k;
      }
    }
    // One request per class per pass, so that a busy class cannot fill every slot
    // before a quieter one gets its turn.
    auto wake = now + std::chrono::milliseconds(100);
    bool progress = true;
    while (progress && !free.empty()) {
      progress = false;
      for (size_t j = 0; j < n && !free.empty(); ++j) {
        size_t ci = (rr + j) % n;
        auto& q = ready[ci];
        if (q.empty()) continue;
        RateClass& c = classes[ci];
        if (c.fuse.rejecting(now) && c.reroute_fused) {
          reroute_fused(q, reqs, c, now, remaining);
          continue;
        }
        if (c.fuse.rejecting(now)) {
          for (size_t id : q) {
            Request& r = reqs[id];
            std::string why = "fuse open for class '" + c.name + "'";
            why += r.attempts == 0 ? " (not sent)"
                                   : " after " + std::to_string(r.attempts) +
                                         " attempt(s), last: " + r.last.what + ": " + s.method +
                                         " " + r.url;
            ++c.fuse_rejects;
            fail(r, c, std::move(why), remaining, false);
          }
          q.clear();
          continue;
        }
        if (c.paused_until > now) {
          if (c.reroute_limited) reroute_limited(q, reqs, c, c.paused_until, now, s, remaining);
          wake = std::min(wake, c.paused_until);
          continue;
        }
        auto next = c.bucket.next_token(now);
        if (next > now) {
          if (c.reroute_limited) reroute_limited(q, reqs, c, next, now, s, remaining);
          wake = std::min(wake, next);
          continue;
        }
        auto d = c.fuse.decide(now);
        if (d == Fuse::Decision::wait) continue;  // a probe is out; its answer wakes us
        c.bucket.try_take(now);
        Request& r = reqs[q.front()];
        q.pop_front();
        r.probe = d == Fuse::Decision::probe;
        Slot* slot = free.back();
        free.pop_back();
        start(*slot, r, s);
        progress = true;
      }
      ++rr;
    }
    for (size_t id : delayed) wake = std::min(wake, reqs[id].not_before);

    int running = 0;
    curl_multi_perform(multi_, &running);
    bool finished = false;
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      CURL* e = m->easy_handle;
      CURLcode code = m->data.result;  // read before remove: the message dies with it
      curl_multi_remove_handle(multi_, e);
      Slot* slot = nullptr;
      curl_easy_getinfo(e, CURLINFO_PRIVATE, &slot);
      finish(*slot, code, classes, s, delayed, reqs, remaining);
      free.push_back(slot);
      finished = true;
    }
    if (tick && Clock::now() - last_tick > std::chrono::milliseconds(500)) {
      tick();
      last_tick = Clock::now();
    }
    if (remaining == 0 || finished) continue;
    curl_multi_poll(multi_, nullptr, 0, ms_until(Clock::now(), wake), nullptr);
  }
}

}  // namespace exactly::http
