#include "http_sink.hpp"

#include <curl/curl.h>

#include <cctype>
#include <mutex>

namespace exactly::http {

namespace {

// curl_global_init is not thread-safe before 7.84 and must run once per process; the
// plugin is the only libcurl user it knows of.
void curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool header_safe(std::string_view s) {
  return s.find('\r') == std::string_view::npos && s.find('\n') == std::string_view::npos &&
         s.find('\0') == std::string_view::npos;
}

bool token(std::string_view name) {
  if (name.empty()) return false;
  for (unsigned char c : name)
    if (c <= 32 || c >= 127 || std::strchr("()<>@,;:\\\"/[]?={}", c) != nullptr) return false;
  return true;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace

HttpSink::HttpSink(sdk::Host host, const sdk::Config& config)
    : host_(host), settings_(Settings::from(config)) {
  Settings::check(config);
  curl_once();
  classes_.apply(settings_.classes, Clock::now());
  if (settings_.retry_topic.on()) requeue_ = std::make_unique<Requeue>(host_, settings_.retry_topic);
}

sdk::Status HttpSink::open(std::optional<sdk::Checkpoint>&) {
  return requeue_ ? requeue_->open() : sdk::Status::ok();
}

sdk::Status HttpSink::prepare_commit() {
  // Every record re-enqueued in this round is in the retry topic before it commits.
  return requeue_ ? requeue_->flush() : sdk::Status::ok();
}

sdk::Status HttpSink::validate(const sdk::Config& config) {
  Settings::check(config);
  return sdk::Status::ok();
}

HttpSink::~HttpSink() = default;

bool HttpSink::build(const ex_record& r, size_t i, Request& q, std::string& reason) {
  const Settings& s = settings_;
  fields_.reset(r);
  q.index = i;
  if (!s.url.render(fields_, q.url, reason)) return false;
  q.cls = classes_.default_index();
  if (s.class_field)
    if (auto v = fields_.get(*s.class_field)) q.cls = classes_.find(*v);
  auto add = [&](std::string_view name, std::string_view value) {
    std::string line;
    line.reserve(name.size() + value.size() + 2);
    line.append(name).append(": ").append(value);
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
  std::vector<Request> reqs;
  reqs.reserve(in.size());
  std::string reason;
  for (size_t i = 0; i < in.size(); ++i) {
    Request q;
    if (!build(in[i], i, q, reason)) {
      errors.reject(i, reason);
      continue;
    }
    reqs.push_back(std::move(q));
  }
  dispatcher_.run(reqs, classes_, settings_, [this] { publish(false); });
  size_t failed = 0;
  const std::string* first = nullptr;
  sdk::Status requeue_st = sdk::Status::ok();
  for (auto& q : reqs)
    if (!q.delivered) {
      if (requeue_ && requeue_->offer(in[q.index], q, classes_[q.cls], requeue_st)) continue;
      if (!requeue_st) return requeue_st;  // the producer failed: the round is replayed
      errors.reject(q.index, q.reason);
      if (failed++ == 0) first = &q.reason;
    }
  publish(true);
  if (failed > 0)
    host_.warn(std::to_string(failed) + " of " + std::to_string(reqs.size()) +
               " request(s) failed for good; first: " + *first);
  return sdk::Status::ok();
}

sdk::Status HttpSink::commit(const sdk::Checkpoint*, bool& stored_positions) {
  // Every request already has its final outcome (write waits for them); the host
  // commits the source positions after this.
  stored_positions = false;
  return sdk::Status::ok();
}

sdk::Status HttpSink::reconfigure(const sdk::Config& config) {
  Settings next = Settings::from(config);
  if (!next.same_connection_settings(settings_))
    return sdk::Status::unsupported("only classes, fuse.failures and fuse.cooldown change in place");
  settings_.classes = next.classes;
  classes_.apply(settings_.classes, Clock::now());
  host_.info("rate classes reconfigured in place (" + std::to_string(classes_.size()) + " classes)");
  publish(true);
  return sdk::Status::ok();
}

void HttpSink::publish(bool final_of_batch) {
  auto now = Clock::now();
  uint64_t trips = 0;
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
    host_.gauge("http_sink_class_rate", c.bucket.rate(), l);
    host_.gauge("http_sink_class_tokens", c.bucket.tokens(now), l);
    host_.gauge("http_sink_fuse_state", static_cast<double>(static_cast<int>(c.fuse.state())), l);
    trips += c.fuse.trips();
  }
  host_.gauge("http_sink_in_flight", final_of_batch ? 0.0 : static_cast<double>(dispatcher_.in_flight()));
  if (trips > fuse_trips_seen_) {
    host_.warn("fuse opened " + std::to_string(trips - fuse_trips_seen_) +
               " time(s); records of a class with an open fuse go to the error policy");
    fuse_trips_seen_ = trips;
  }
}

}  // namespace exactly::http
