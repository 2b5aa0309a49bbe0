// Sends a batch's requests through one libcurl multi handle: up to max.in.flight at
// once over kept-alive connections, each class gated by its token bucket, its fuse and
// any Retry-After pause, retriable failures retried with backoff. Returns when every
// request has a final outcome (delivered, or failed with a reason). Classes are
// independent: a class that waits for tokens or is fused never holds a slot another
// class could use.
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
  Dispatcher();
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // `tick` is called about twice a second while requests are out (metrics).
  void run(std::vector<Request>& reqs, RateClasses& classes, const Settings& s,
           const std::function<void()>& tick = {});
  int in_flight() const { return in_flight_; }

 private:
  struct Slot {
    CURL* easy = nullptr;
    Request* req = nullptr;
    size_t max_body = 0;
    char error[CURL_ERROR_SIZE] = {0};
  };
  void run_batch(std::vector<Request>& reqs, RateClasses& classes, const Settings& s,
                 const std::function<void()>& tick);
  void abandon();
  static size_t on_body(char* p, size_t size, size_t n, void* slot);
  void start(Slot& slot, Request& r, const Settings& s);
  void finish(Slot& slot, CURLcode code, RateClasses& classes, const Settings& s,
              std::vector<size_t>& delayed, std::vector<Request>& reqs, size_t& remaining);
  // `downstream`: a failure the downstream gave (not a fuse refusal).
  void fail(Request& r, RateClass& c, std::string reason, size_t& remaining, bool downstream = true);
  // when.fused / when.limited: reroute (dispatcher_reroute.cpp): the class's waiting
  // records are handed back for the retry topic instead of being rejected or waiting.
  void reroute_fused(std::deque<size_t>& q, std::vector<Request>& reqs, RateClass& c,
                     Clock::time_point now, size_t& remaining);
  void reroute_limited(std::deque<size_t>& q, std::vector<Request>& reqs, RateClass& c,
                       Clock::time_point turn, Clock::time_point now, const Settings& s,
                       size_t& remaining);

  CURLM* multi_ = nullptr;
  std::vector<Slot> slots_;
  int in_flight_ = 0;
  int max_conns_ = 0;
  std::mt19937 rng_{std::random_device{}()};
};

}  // namespace exactly::http
