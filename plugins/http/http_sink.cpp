#include "http_sink.hpp"
#include "header_text.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>

namespace exactly::http {

namespace {

// curl_global_init is not thread-safe before 7.84 and must run once per process; the
// plugin is the only libcurl user it knows of.
void curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}


}  // namespace

HttpSink::HttpSink(sdk::Host host, const sdk::Config& config)
    : host_(host), settings_(Settings::from(config)) {
  Settings::check(config);
  curl_once();
  for (const auto& line : classes_.apply(settings_.classes, settings_.rate_group, Clock::now()))
    host_.warn(line);
  on_done_ = [this](Request& r) {
    window_.finished(r);
    progress_.notify_all();
  };
  transfers_ = std::thread([this] { run_transfers(); });
  if (settings_.retry_topic.on()) requeue_ = std::make_unique<Requeue>(host_, settings_.retry_topic);
}

sdk::Status HttpSink::open(std::optional<sdk::Checkpoint>&) {
  return requeue_ ? requeue_->open() : sdk::Status::ok();
}

sdk::Status HttpSink::prepare_commit() {
  // completed() ran before this in the round: every record it re-enqueued is in the retry
  // topic before the round commits past it.
  return requeue_ ? requeue_->flush() : sdk::Status::ok();
}

sdk::Status HttpSink::validate(const sdk::Config& config) {
  Settings::check(config);
  return sdk::Status::ok();
}

HttpSink::~HttpSink() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  dispatcher_.wakeup();
  transfers_.join();
}

void HttpSink::run_transfers() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    int wait = 0;
    try {
      if (drop_) {
        dispatcher_.drop(drop_);
        drop_ = nullptr;
        progress_.notify_all();
      }
      wait = dispatcher_.pump(classes_, settings_, on_done_, 100);
    } catch (const std::exception& e) {
      // Transfers may point at the window's requests: cut them loose. The pipeline's next
      // call fails, the instance is rebuilt and replays from the committed positions.
      dispatcher_.drop([](const Request&) { return true; });
      transfer_error_ = e.what();
      progress_.notify_all();
      return;
    }
    lk.unlock();
    // Even with more to do at once (wait 0): a poll outside the lock lets a waiting
    // pipeline thread in (sched_yield would give the core away on a busy machine).
    dispatcher_.wait(std::max(wait, 0));
    lk.lock();
  }
}

void HttpSink::drop(std::unique_lock<std::mutex>& lk, std::function<bool(const Request&)> which) {
  if (!transfer_error_.empty()) return;  // the thread is gone and dropped everything
  drop_ = std::move(which);
  dispatcher_.wakeup();
  progress_.wait(lk, [this] { return !drop_ || !transfer_error_.empty(); });
}

sdk::Status HttpSink::transfer_failure() const {
  return sdk::Status::fatal("http sink: the transfer thread failed: " + transfer_error_);
}

bool HttpSink::build(const ex_record& r, size_t i, Request& q, std::string& reason) {
  const Settings& s = settings_;
  fields_.reset(r);
  q.index = i;
  if (!s.url.render(fields_, q.url, reason)) return false;
  q.cls = classes_.default_index();
  if (s.class_field)
    if (auto v = fields_.get(*s.class_field)) {
      q.class_value = std::string(*v);
      q.cls = classes_.find(q.class_value);
    }
  auto add = [&](std::string_view name, std::string_view value) {
    std::string line;
    line.reserve(name.size() + value.size() + 2);
    // libcurl drops a header whose value is empty; "Name;" is its way to send one.
    if (value.empty()) line.append(name).append(";");
    else line.append(name).append(": ").append(value);
    q.headers = curl_slist_append(q.headers, line.c_str());
  };
  for (auto& [k, v] : s.headers) add(k, v);
  if (!s.content_type.empty()) add("Content-Type", s.content_type);
  if (s.idempotency_key) {
    auto v = fields_.get(*s.idempotency_key);
    if (!v || v->empty()) {
      reason = "idempotency key: no value at " + s.idempotency_key->describe();
      return false;
    }
    if (!header_safe(*v)) {
      reason = "idempotency key has a line break";
      return false;
    }
    add(s.idempotency_header, *v);
  }
  if (s.forward_headers) {
    for (uint32_t h = 0; h < r.header_count; ++h) {
      std::string_view name = sdk::view(r.headers[h].key), value = sdk::view(r.headers[h].value);
      // Configured headers win over the record's, so a record cannot override them.
      bool shadowed = iequals(name, "Content-Type") || iequals(name, s.idempotency_header) ||
                      iequals(name, "Content-Length") || iequals(name, "Host");
      // The last failure's text is this pipeline's bookkeeping, not the API's: it quotes
      // an earlier response (exactly.retry.count and exactly.not-before are passed on).
      shadowed = shadowed || name == kRetryReasonHeader;
      for (auto& [k, v] : s.headers) shadowed = shadowed || iequals(name, k);
      if (shadowed) continue;
      if (!token(name) || !header_safe(value)) {
        reason = "record header '" + std::string(name) +
                 "' cannot be sent as an HTTP header (bad name or a line break in its value)";
        return false;
      }
      add(name, value);
    }
  }
  // No "Expect: 100-continue" round trip for bodies over 1 KiB.
  q.headers = curl_slist_append(q.headers, "Expect:");
  q.body = sdk::view(r.value);
  return true;
}

sdk::Status HttpSink::write(const sdk::Batch& in, const sdk::RecordErrors& errors) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!transfer_error_.empty()) return transfer_failure();
  std::string reason;
  for (size_t i = 0; i < in.size(); ++i) {
    auto& e = window_.add(in[i]);
    if (!build(e.record, e.req.index, e.req, reason)) {
      window_.forget(e.req.index);
      errors.reject(i, reason);
      continue;
    }
    dispatcher_.submit(e.req);
  }
  dispatcher_.wakeup();
  // Backpressure: only a full window holds the pipeline. Not a stopping one: the round
  // then commits what was delivered (completed() lowers the positions) and the rest goes
  // again at the next start. Held here, a throttled class kept a stop waiting for minutes
  // (QA: rate 20, 15,000 records in the window), past shutdown.timeout: exit 3 with
  // nothing committed, so what was delivered went again too.
  while (window_full() && transfer_error_.empty() && !host_.stopping())
    if (progress_.wait_for(lk, std::chrono::milliseconds(100)) == std::cv_status::timeout) {
      if (++waits_ % 5 == 0) publish();
    }
  if (!transfer_error_.empty()) return transfer_failure();
  publish();
  return sdk::Status::ok();
}

bool HttpSink::window_full() const {
  return window_.open_records() >= static_cast<size_t>(settings_.window_records) ||
         window_.open_bytes() >= static_cast<size_t>(settings_.window_bytes);
}

size_t HttpSink::class_of(const Request& r) {
  return r.class_value.empty() ? classes_.default_index() : classes_.find(r.class_value);
}

sdk::Status HttpSink::completed(std::vector<sdk::Partition>& parts, const sdk::RecordErrors& errors) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!transfer_error_.empty()) return transfer_failure();
  // Final failures (retries used up, rerouted classes) are known here, on the pipeline
  // thread: with a retry topic each one it takes is re-enqueued (and complete for the
  // window), the rest are record errors. The producer runs here, not on the transfer
  // thread, so prepare_commit's flush covers everything offered in the round.
  CompletionWindow::Offer offer;
  if (requeue_)
    offer = [this](CompletionWindow::Entry& e, sdk::Status& st) {
      return requeue_->offer(e.record, e.req, classes_[class_of(e.req)], st);
    };
  sdk::Status st = sdk::Status::ok();
  size_t failed = window_.report_failures(errors, offer, st);
  if (!st) return st;  // the producer failed: the round is replayed
  window_.lower(parts);
  if (failed > 0)
    host_.warn(std::to_string(failed) + " record(s) not delivered, to the error policy (retries used "
               "up, a permanent answer, or turned away unsent by an open fuse)");
  publish();
  return sdk::Status::ok();
}

sdk::Status HttpSink::revoke(const std::vector<sdk::Partition>& parts) {
  // Whatever is open of them is not committed; the next owner sends it again.
  std::set<int32_t> ids;
  for (const auto& p : parts) ids.insert(p.id);
  std::unique_lock<std::mutex> lk(mu_);
  drop(lk, [ids](const Request& r) { return ids.count(r.partition) != 0; });
  window_.forget_partitions(ids);
  return sdk::Status::ok();
}

sdk::Status HttpSink::abort() {
  // The host rewinds to the committed positions, which are at or before every open record.
  std::unique_lock<std::mutex> lk(mu_);
  drop(lk, [](const Request&) { return true; });
  window_.clear();
  publish();
  return sdk::Status::ok();
}

sdk::Status HttpSink::commit(const sdk::Checkpoint*, bool& stored_positions) {
  // The host committed positions no further than the lowest open record (completed()).
  stored_positions = false;
  return sdk::Status::ok();
}

sdk::Status HttpSink::reconfigure(const sdk::Config& config) {
  Settings next = Settings::from(config);
  if (!next.same_connection_settings(settings_))
    return sdk::Status::unsupported(
        "only classes, fuse.failures, fuse.cooldown, when.limited and when.fused change in place");
  std::unique_lock<std::mutex> lk(mu_);
  settings_.classes = next.classes;
  for (const auto& line : classes_.apply(settings_.classes, settings_.rate_group, Clock::now()))
    host_.warn(line);
  // Requests in the window keep their class by name; indexes may have moved.
  dispatcher_.reclass([this](Request& r) { r.cls = class_of(r); });
  host_.info("rate classes reconfigured in place (" + std::to_string(classes_.size()) + " classes)");
  publish();
  return sdk::Status::ok();
}

void HttpSink::publish() {
  auto now = Clock::now();
  for (size_t i = 0; i < classes_.size(); ++i) {
    RateClass& c = classes_[i];
    const char* l = c.labels.c_str();
    if (c.requests) host_.counter("http_sink_requests_total", static_cast<double>(c.requests), l);
    if (c.ok) host_.counter("http_sink_delivered_total", static_cast<double>(c.ok), l);
    if (c.retries) host_.counter("http_sink_retries_total", static_cast<double>(c.retries), l);
    if (c.failures) host_.counter("http_sink_failures_total", static_cast<double>(c.failures), l);
    if (c.fuse_rejects)
      host_.counter("http_sink_fuse_rejected_total", static_cast<double>(c.fuse_rejects), l);
    c.requests = c.ok = c.retries = c.failures = c.fuse_rejects = 0;
    publish_requeued(host_, c);
    host_.gauge("http_sink_class_rate", c.limit->rate(), l);
    host_.gauge("http_sink_class_tokens", c.limit->tokens(now), l);
    host_.gauge("http_sink_fuse_state", static_cast<double>(static_cast<int>(c.fuse.state_at(now))), l);
    // Each open and close of a class's fuse, by class: an operator watching an outage
    // wants to see when its traffic stopped and when it went again.
    if (c.fuse.trips() > c.trips_logged) {
      host_.warn("fuse of class '" + c.name + "' opened" +
                 (c.fuse.trips() - c.trips_logged > 1
                      ? " (" + std::to_string(c.fuse.trips() - c.trips_logged) + " times since the last report)"
                      : std::string()) +
                 ": its records are not sent for " + std::to_string(c.fuse.cooldown().count() / 1000) +
                 " s, then one probe request goes; " +
                 (c.reroute_fused ? "meanwhile they go to the retry topic" : "meanwhile they go to the error policy"));
      c.trips_logged = c.fuse.trips();
    }
    if (c.fuse.closes() > c.closes_logged) {
      host_.info("fuse of class '" + c.name + "' closed: a probe request was answered, its records go again");
      c.closes_logged = c.fuse.closes();
    }
  }
  host_.gauge("http_sink_in_flight", static_cast<double>(dispatcher_.in_flight()));
  // What waits behind them: in_flight alone read 0 with 14,000 records held by a
  // throttled class (QA).
  host_.gauge("http_sink_window_records", static_cast<double>(window_.open_records()));
}

}  // namespace exactly::http
