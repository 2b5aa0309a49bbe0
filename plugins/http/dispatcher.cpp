#include "dispatcher.hpp"

#include "url_display.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <string_view>
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

void Dispatcher::ensure_slots(const Settings& s) {
  if (slots_.size() >= static_cast<size_t>(s.max_in_flight)) return;
  // Slots are never added while transfers point at them: reserve once, all at once.
  slots_.reserve(static_cast<size_t>(s.max_in_flight));
  while (slots_.size() < static_cast<size_t>(s.max_in_flight)) {
    Slot slot;
    slot.easy = curl_easy_init();
    if (slot.easy == nullptr) throw std::runtime_error("curl_easy_init failed");
    slots_.push_back(slot);
    free_.push_back(&slots_.back());
  }
  if (max_conns_ != s.max_in_flight) {
    // Keep one idle connection per possible in-flight request.
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(s.max_in_flight));
    max_conns_ = s.max_in_flight;
  }
}

void Dispatcher::submit(Request& r) {
  if (ready_.size() <= r.cls) ready_.resize(r.cls + 1);
  ready_[r.cls].push_back(&r);
  ++pending_;
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
  // libcurl sends a request again by itself (up to 5 times) when the kept-alive connection
  // it went out on turns out closed before any answer; the sink neither sees nor counts
  // those sends. A retry goes out on a fresh connection, where libcurl does not, so only a
  // first attempt can be sent more than once by it (docs: plugins/http/README.md).
  if (r.attempts > 1) curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
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

void Dispatcher::fail(Request& r, RateClass& c, std::string reason, bool downstream) {
  r.done = true;
  r.delivered = false;
  r.reason = std::move(reason);
  if (downstream) ++c.failures;
}

namespace {
std::string final_reason(const Request& r, const Settings& s) {
  std::string m = r.last.what + " after " + std::to_string(r.attempts) + " attempt(s): " +
                  s.method + " " + display_url(r.url);
  if (!r.response.empty()) m += "; response: " + r.response;
  return m;
}
}  // namespace

namespace {
// libcurl answers 0 for a Retry-After too long for its parser (20 digits): such a server
// asks for the longest wait there is, which retry.after.max then caps; not for none.
bool long_retry_after(CURL* easy) {
  struct curl_header* h = nullptr;
  if (curl_easy_header(easy, "Retry-After", 0, CURLH_HEADER, -1, &h) != CURLHE_OK || h == nullptr ||
      h->value == nullptr)
    return false;
  std::string_view v(h->value);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v.size() > 18 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}
}  // namespace

bool Dispatcher::finish(Slot& slot, CURLcode code, RateClasses& classes, const Settings& s) {
  Request& r = *slot.req;
  slot.req = nullptr;
  --in_flight_;
  long status = 0;
  curl_off_t retry_after = 0;
  curl_easy_getinfo(slot.easy, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(slot.easy, CURLINFO_RETRY_AFTER, &retry_after);
  if (retry_after <= 0 && long_retry_after(slot.easy)) retry_after = std::numeric_limits<curl_off_t>::max();
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
      return true;
    case Outcome::Verdict::fail:
      fail(r, c, final_reason(r, s));
      return true;
    case Outcome::Verdict::retry:
      break;
  }
  std::chrono::milliseconds delay{0};
  if (r.last.retry_after_ms >= 0) {
    // The downstream named a time: the whole class waits, not only this record.
    delay = std::chrono::milliseconds(std::min(r.last.retry_after_ms, s.retry_after_max_ms));
    c.limit->pause_until(now + delay);
  }
  if (r.attempts > s.retry_max) {
    // With a retry topic it may not be final: requeue.cpp counts it if it is.
    fail(r, c, final_reason(r, s), !s.retry_topic.on());
    r.later = Request::Later::failed;
    return true;
  }
  if (r.last.retry_after_ms < 0) delay = backoff(r.attempts, s.backoff_initial_ms, s.backoff_max_ms, rng_);
  r.not_before = now + delay;
  ++c.retries;
  delayed_.push_back(&r);
  return false;
}

void Dispatcher::drop(const std::function<bool(const Request&)>& which) {
  for (auto& slot : slots_)
    if (slot.req != nullptr && which(*slot.req)) {
      curl_multi_remove_handle(multi_, slot.easy);
      slot.req = nullptr;
      free_.push_back(&slot);
      --in_flight_;
      --pending_;
    }
  for (auto& q : ready_)
    for (auto it = q.begin(); it != q.end();)
      if (which(**it)) {
        it = q.erase(it);
        --pending_;
      } else {
        ++it;
      }
  for (size_t k = 0; k < delayed_.size();)
    if (which(*delayed_[k])) {
      delayed_[k] = delayed_.back();
      delayed_.pop_back();
      --pending_;
    } else {
      ++k;
    }
}

void Dispatcher::reclass(const std::function<void(Request&)>& fix) {
  std::vector<Request*> waiting;
  for (auto& q : ready_) waiting.insert(waiting.end(), q.begin(), q.end());
  ready_.clear();
  for (Request* r : waiting) {
    fix(*r);
    if (ready_.size() <= r->cls) ready_.resize(r->cls + 1);
    ready_[r->cls].push_back(r);
  }
  for (Request* r : delayed_) fix(*r);
  for (auto& slot : slots_)
    if (slot.req != nullptr) fix(*slot.req);
}

void Dispatcher::start_ready(RateClasses& classes, const Settings& s, const Done& done,
                             Clock::time_point now, Clock::time_point& wake) {
  const size_t n = classes.size();
  if (ready_.size() < n) ready_.resize(n);
  // One request per class per pass, so that a busy class cannot fill every slot before a
  // quieter one gets its turn; and a class holds no more than its share of the slots
  // while another could send now: turns alone gave every slot a fast class handed back to
  // a slow one, until the slow one held them all and paced the others.
  std::vector<size_t> busy(n, 0);
  for (const auto& slot : slots_)
    if (slot.req != nullptr && slot.req->cls < n) ++busy[slot.req->cls];
  auto could_send = [&](size_t ci) {
    RateClass& c = classes[ci];
    return !ready_[ci].empty() && !c.fuse.rejecting(now) && c.limit->paused_until() <= now &&
           c.limit->next_token(now) <= now;
  };
  bool progress = true;
  while (progress && !free_.empty()) {
    progress = false;
    size_t active = 0;
    for (size_t k = 0; k < n; ++k) active += busy[k] > 0 || could_send(k) ? 1 : 0;
    const size_t share = std::max<size_t>(1, slots_.size() / std::max<size_t>(active, 1));
    for (size_t j = 0; j < n && !free_.empty(); ++j) {
      size_t ci = (rr_ + j) % n;
      auto& q = ready_[ci];
      if (q.empty()) continue;
      RateClass& c = classes[ci];
      if (c.fuse.rejecting(now) && c.reroute_fused) {
        reroute_fused(q, c, now, done);
        continue;
      }
      if (c.fuse.rejecting(now)) {
        while (!q.empty()) {
          Request& r = *q.front();
          q.pop_front();
          std::string why = "fuse open for class '" + c.name + "'";
          why += r.attempts == 0 ? " (not sent)"
                                 : " after " + std::to_string(r.attempts) +
                                       " attempt(s), last: " + r.last.what + ": " + s.method +
                                       " " + display_url(r.url);
          ++c.fuse_rejects;
          fail(r, c, std::move(why), false);
          --pending_;
          done(r);
        }
        continue;
      }
      if (const auto paused_until = c.limit->paused_until(); paused_until > now) {
        if (c.reroute_limited) reroute_limited(q, c, paused_until, now, s, done);
        wake = std::min(wake, paused_until);
        continue;
      }
      auto next = c.limit->next_token(now);
      if (next > now) {
        if (c.reroute_limited) reroute_limited(q, c, next, now, s, done);
        wake = std::min(wake, next);
        continue;
      }
      // Only here, where a slot is taken: a fused, paused or limited class above fails,
      // reroutes or waits at once, whatever its share.
      if (busy[ci] >= share) {
        bool other = false;
        for (size_t k = 0; k < n && !other; ++k) other = k != ci && could_send(k);
        if (other) continue;
      }
      // Another sink of the class's rate.group may have taken the token since.
      if (!c.limit->try_take(now)) {
        wake = std::min(wake, c.limit->next_token(now));
        continue;
      }
      auto d = c.fuse.decide(now);
      if (d == Fuse::Decision::wait) {  // a probe is out; its answer wakes us
        c.limit->give_back();
        continue;
      }
      Request& r = *q.front();
      q.pop_front();
      r.probe = d == Fuse::Decision::probe;
      Slot* slot = free_.back();
      free_.pop_back();
      start(*slot, r, s);
      ++busy[ci];
      progress = true;
    }
    ++rr_;
  }
}

int Dispatcher::pump(RateClasses& classes, const Settings& s, const Done& done, int wait_ms) {
  ensure_slots(s);
  auto now = Clock::now();
  // A due retry goes ahead of its class's queue, not behind it: at the back of a
  // rate-limited class's backlog it waited seconds past retry.backoff.max, and its record
  // (the oldest still open) held the committed position back all that time, so a crash
  // replayed everything sent after it. Due retries keep their order among themselves.
  std::vector<Request*> due;
  for (size_t k = 0; k < delayed_.size();) {
    Request* r = delayed_[k];
    if (r->not_before <= now) {
      due.push_back(r);
      delayed_[k] = delayed_.back();
      delayed_.pop_back();
    } else {
      ++k;
    }
  }
  std::sort(due.begin(), due.end(),
            [](const Request* a, const Request* b) { return a->not_before > b->not_before; });
  for (Request* r : due) {
    if (ready_.size() <= r->cls) ready_.resize(r->cls + 1);
    ready_[r->cls].push_front(r);
  }
  auto wake = now + std::chrono::milliseconds(std::max(wait_ms, 0));
  start_ready(classes, s, done, now, wake);
  for (Request* r : delayed_) wake = std::min(wake, r->not_before);

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
    Request& r = *slot->req;
    free_.push_back(slot);
    if (finish(*slot, code, classes, s)) {
      --pending_;
      done(r);
    }
    finished = true;
  }
  if (finished) return 0;
  return ms_until(Clock::now(), wake);
}

void Dispatcher::wait(int ms) { curl_multi_poll(multi_, nullptr, 0, ms, nullptr); }

void Dispatcher::wakeup() { curl_multi_wakeup(multi_); }

}  // namespace exactly::http
