// Drives the sink's requests through one libcurl multi handle, on one thread: up to max.in.flight at
// once over kept-alive connections, each class gated by its token bucket, its fuse and
// any Retry-After pause, retriable failures retried with backoff. Requests stay here
// across write() calls (the sink's completion window): each pump() moves them on and
// hands every request that reached a final outcome (delivered, or failed with a reason)
// to the caller. Classes are independent: a class that waits for tokens or is fused
// never holds a slot another class could use.
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "http_settings.hpp"
#include "rate_classes.hpp"
#include "request.hpp"

namespace exactly::http {

class Dispatcher {
 public:
  using Done = std::function<void(Request&)>;

  Dispatcher();
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // `r` stays owned by the caller and must live until it is handed to Done or dropped.
  void submit(Request& r);
  // One pass: start what may start, move transfers on, hand final requests to `done`.
  // Returns how long the caller may wait() before the next pass is due (at most
  // `wait_ms`; 0 when something became final).
  int pump(RateClasses& classes, const Settings& s, const Done& done, int wait_ms);
  // Waits for transfer activity, wakeup() or `ms`. The only call that may run while
  // another thread uses the other members (under the caller's lock).
  void wait(int ms);
  // Ends a wait() early; callable from any thread.
  void wakeup();
  // Forgets the requests `which` selects (in flight ones are cut off); never handed to Done.
  void drop(const std::function<bool(const Request&)>& which);
  // After the classes were rebuilt: `fix` re-resolves each request's class index.
  void reclass(const std::function<void(Request&)>& fix);
  size_t pending() const { return pending_; }
  int in_flight() const { return in_flight_; }

 private:
  struct Slot {
    CURL* easy = nullptr;
    Request* req = nullptr;
    size_t max_body = 0;
    char error[CURL_ERROR_SIZE] = {0};
  };
  void ensure_slots(const Settings& s);
  static size_t on_body(char* p, size_t size, size_t n, void* slot);
  void start(Slot& slot, Request& r, const Settings& s);
  // True when `r` is final (else it was scheduled for a retry).
  bool finish(Slot& slot, CURLcode code, RateClasses& classes, const Settings& s);
  // `downstream`: a failure the downstream gave (not a fuse refusal).
  void fail(Request& r, RateClass& c, std::string reason, bool downstream = true);
  void start_ready(RateClasses& classes, const Settings& s, const Done& done,
                   Clock::time_point now, Clock::time_point& wake);
  // when.fused / when.limited: reroute (dispatcher_reroute.cpp): the class's waiting
  // requests become final "rerouted" outcomes (Request::later), handed to `done`, for the
  // sink to offer to the retry topic instead of rejecting them or letting them wait.
  void reroute_fused(std::deque<Request*>& q, RateClass& c, Clock::time_point now,
                     const Done& done);
  void reroute_limited(std::deque<Request*>& q, RateClass& c, Clock::time_point turn,
                       Clock::time_point now, const Settings& s, const Done& done);

  CURLM* multi_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<Slot*> free_;
  std::vector<std::deque<Request*>> ready_;  // by class
  std::vector<Request*> delayed_;            // waiting out a retry backoff
  size_t pending_ = 0;
  size_t rr_ = 0;
  int in_flight_ = 0;
  int max_conns_ = 0;
  std::mt19937 rng_{std::random_device{}()};
};

}  // namespace exactly::http
