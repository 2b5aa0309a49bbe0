#include "http_settings.hpp"
#include "header_text.hpp"

#include <curl/curl.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace exactly::http {

namespace {
constexpr double kMaxDurationMs = 100.0 * 365 * 24 * 3600 * 1000;
}  // namespace

std::chrono::milliseconds parse_duration(const std::string& key, const std::string& t) {
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  std::string unit = end ? std::string(end) : std::string();
  double ms = -1;
  if (t.empty() || end == t.c_str()) ms = -1;
  else if (unit.empty() || unit == "ms") ms = v;
  else if (unit == "s") ms = v * 1000;
  else if (unit == "m") ms = v * 60000;
  else if (unit == "h") ms = v * 3600000;
  // NaN, and values no int64 of milliseconds holds (their cast is undefined; found by
  // fuzz_http_config), are refused like any other bad duration.
  if (!(ms >= 0) || ms > kMaxDurationMs)
    throw sdk::ConfigError(key, "expected a duration such as 500ms, 10s or 2m (at most 100 years), got '" + t + "'");
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

namespace {

double parse_number(const std::string& key, const std::string& t) {
  char* end = nullptr;
  double d = std::strtod(t.c_str(), &end);
  // Not finite (nan, inf) is refused too: a rate or burst of NaN compares false everywhere.
  if (t.empty() || *end != '\0' || !(d >= 0) || !std::isfinite(d))
    throw sdk::ConfigError(key, "expected a number >= 0, got '" + t + "'");
  return d;
}

bool parse_bool(const std::string& key, const std::string& t) {
  if (t == "true") return true;
  if (t == "false") return false;
  throw sdk::ConfigError(key, "expected true or false, got '" + t + "'");
}

FieldRef field_of(const std::string& key, const std::string& text) {
  try {
    return FieldRef::parse(text);
  } catch (const std::invalid_argument& e) {
    throw sdk::ConfigError(key, e.what());
  }
}

// classes.<name>.<setting>, starting from the class-wide defaults.
void read_classes(const sdk::Config& c, Settings& s, const ClassSettings& base) {
  s.classes["default"] = base;
  for (auto& [sub, value] : c.get_map("classes")) {
    size_t dot = sub.find('.');
    std::string key = "classes." + sub;
    if (dot == std::string::npos || dot == 0)
      throw sdk::ConfigError(key, "expected classes.<name>.<rate|burst|open|fuse.failures|fuse.cooldown|when.limited|when.fused>");
    std::string name = sub.substr(0, dot), setting = sub.substr(dot + 1);
    auto [it, fresh] = s.classes.try_emplace(name, base);
    ClassSettings& cs = it->second;
    if (setting == "rate") cs.rate = parse_number(key, value);
    else if (setting == "burst") {
      // 0 read as "unset" gave the default, a whole second's worth (max(1, rate)): the
      // opposite of what `burst: 0` says.
      cs.burst = parse_number(key, value);
      if (cs.burst < 1)
        throw sdk::ConfigError(key, "must be at least 1 (1: one request at a time at the class's "
                                    "rate; leave it out for the default, max(1, rate))");
    }
    else if (setting == "open") cs.open = parse_bool(key, value);
    else if (setting == "fuse.failures") cs.fuse_failures = static_cast<int>(parse_number(key, value));
    else if (setting == "fuse.cooldown") cs.fuse_cooldown = parse_duration(key, value);
    else if (setting == "when.limited") cs.reroute_limited = parse_when_limited(key, value);
    else if (setting == "when.fused") cs.reroute_fused = parse_when_fused(key, value);
    else
      throw sdk::ConfigError(key, "unknown class setting '" + setting +
                                      "' (rate, burst, open, fuse.failures, fuse.cooldown, "
                                      "when.limited, when.fused)");
    if ((cs.reroute_limited || cs.reroute_fused) && !s.retry_topic.on() &&
        (setting == "when.limited" || setting == "when.fused"))
      throw sdk::ConfigError(key, "reroute sends records to the retry topic: set retry.topic");
  }
}

// Empty when libcurl parses `url`; else libcurl's reason.
std::string curl_url_problem(const std::string& url) {
  CURLU* h = curl_url();
  if (h == nullptr) return {};  // out of memory: leave it to the request
  CURLUcode rc = curl_url_set(h, CURLUPART_URL, url.c_str(), 0);
  curl_url_cleanup(h);
  return rc == CURLUE_OK ? std::string() : std::string(curl_url_strerror(rc));
}

}  // namespace

Settings Settings::from(const sdk::Config& c) {
  Settings s;
  s.url_text = c.require_string("url");
  try {
    s.url = UrlTemplate::parse(s.url_text);
  } catch (const std::invalid_argument& e) {
    throw sdk::ConfigError("url", e.what());
  }
  if (s.url_text.rfind("http://", 0) != 0 && s.url_text.rfind("https://", 0) != 0)
    throw sdk::ConfigError("url", "must start with http:// or https://");
  // libcurl's own parser, as each request will meet it: a URL it cannot parse (an unclosed
  // IPv6 bracket, a space, a bad port) would otherwise fail every record at run time.
  if (std::string why = curl_url_problem(s.url.sample()); !why.empty())
    throw sdk::ConfigError("url", "libcurl cannot parse it: " + why);
  s.method = c.get_string("method", "POST");
  s.forward_headers = c.get_bool("forward.record.headers", true);
  s.content_type = c.get_string("content.type", "application/json");
  if (c.has("idempotency.key") && !c.get_string("idempotency.key").empty())
    s.idempotency_key = field_of("idempotency.key", c.get_string("idempotency.key"));
  s.idempotency_header = c.get_string("idempotency.header", "Idempotency-Key");
  if (!token(s.idempotency_header))
    throw sdk::ConfigError("idempotency.header", "'" + s.idempotency_header + "' is not an HTTP header name");
  // Each configured header goes on the wire as given, so one libcurl or the server would
  // read otherwise is refused here: a name with a space went out as is, and a second
  // Content-Type or Idempotency-Key was sent beside the sink's own (a server that reads
  // the first saw every record as the same request).
  for (auto& [name, value] : c.get_map("headers")) {
    if (!token(name))
      throw sdk::ConfigError("headers." + name,
                             "'" + name + "' is not an HTTP header name (letters, digits and "
                             "!#$%&'*+-.^_`|~ only)");
    if (!header_safe(value))
      throw sdk::ConfigError("headers." + name, "a header value cannot hold a line break");
    if (iequals(name, "Content-Type"))
      throw sdk::ConfigError("headers." + name, "the content type is set by content.type");
    if (iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding"))
      throw sdk::ConfigError("headers." + name, "the sink sets " + name + " from each record's body");
    if (s.idempotency_key && iequals(name, s.idempotency_header))
      throw sdk::ConfigError("headers." + name, "the sink sends " + s.idempotency_header +
                                                    " itself, from idempotency.key, per record");
    s.headers.emplace_back(name, value);
  }
  s.max_in_flight = static_cast<int>(c.get_int("max.in.flight", 64));
  if (s.max_in_flight < 1 || s.max_in_flight > 4096)
    throw sdk::ConfigError("max.in.flight", "must be between 1 and 4096");
  s.window_records = c.get_int("window.records", 10000);
  if (s.window_records < 1) throw sdk::ConfigError("window.records", "must be >= 1");
  s.window_bytes = c.get_size("window.bytes", 64LL << 20);
  if (s.window_bytes < 1) throw sdk::ConfigError("window.bytes", "must be >= 1");
  s.connect_timeout_ms = c.get_duration_ms("connect.timeout", 5000);
  s.request_timeout_ms = c.get_duration_ms("request.timeout", 30000);
  // libcurl reads 0 as "no timeout" (and a connect timeout of 0 as its 300 s): a request
  // the API never answers would hold its slot for ever.
  if (s.connect_timeout_ms < 1) throw sdk::ConfigError("connect.timeout", "must be at least 1ms");
  if (s.request_timeout_ms < 1) throw sdk::ConfigError("request.timeout", "must be at least 1ms");
  s.ca_file = c.get_string("tls.ca.file");
  s.tls_verify = c.get_bool("tls.verify", true);
  s.retry_max = static_cast<int>(c.get_int("retry.max", 10));
  if (s.retry_max < 0) throw sdk::ConfigError("retry.max", "must be >= 0");
  s.backoff_initial_ms = c.get_duration_ms("retry.backoff.initial", 100);
  s.backoff_max_ms = c.get_duration_ms("retry.backoff.max", 10000);
  if (s.backoff_initial_ms < 0 || s.backoff_max_ms < s.backoff_initial_ms)
    throw sdk::ConfigError("retry.backoff.max", "must be at least retry.backoff.initial");
  s.retry_after_max_ms = c.get_duration_ms("retry.after.max", 60000);
  s.response_max = static_cast<size_t>(c.get_size("response.body.max", 512));
  s.class_field_text = c.get_string("class.field");
  if (!s.class_field_text.empty()) s.class_field = field_of("class.field", s.class_field_text);

  s.retry_topic = RetryTopicSettings::parse(c);
  s.rate_group = c.get_string("rate.group");
  s.reroute_wait_max_ms = c.get_duration_ms("reroute.wait.max", 1000);
  if (s.reroute_wait_max_ms < 0) throw sdk::ConfigError("reroute.wait.max", "must not be negative");
  ClassSettings base;
  if (c.has("when.limited")) base.reroute_limited = parse_when_limited("when.limited", c.get_string("when.limited"));
  if (c.has("when.fused")) base.reroute_fused = parse_when_fused("when.fused", c.get_string("when.fused"));
  for (const char* k : {"when.limited", "when.fused"})
    if (c.get_string(k) == "reroute" && !s.retry_topic.on())
      throw sdk::ConfigError(k, "reroute sends records to the retry topic: set retry.topic");
  base.fuse_failures = static_cast<int>(c.get_int("fuse.failures", 0));
  base.fuse_cooldown = std::chrono::milliseconds(c.get_duration_ms("fuse.cooldown", 10000));
  read_classes(c, s, base);
  return s;
}

bool Settings::same_connection_settings(const Settings& o) const {
  return url_text == o.url_text && method == o.method && headers == o.headers &&
         forward_headers == o.forward_headers && content_type == o.content_type &&
         (idempotency_key ? idempotency_key->describe() : "") ==
             (o.idempotency_key ? o.idempotency_key->describe() : "") &&
         idempotency_header == o.idempotency_header && max_in_flight == o.max_in_flight &&
         window_records == o.window_records && window_bytes == o.window_bytes &&
         connect_timeout_ms == o.connect_timeout_ms && request_timeout_ms == o.request_timeout_ms &&
         ca_file == o.ca_file && tls_verify == o.tls_verify && retry_max == o.retry_max &&
         backoff_initial_ms == o.backoff_initial_ms && backoff_max_ms == o.backoff_max_ms &&
         retry_after_max_ms == o.retry_after_max_ms && response_max == o.response_max &&
         class_field_text == o.class_field_text && retry_topic == o.retry_topic &&
         reroute_wait_max_ms == o.reroute_wait_max_ms && rate_group == o.rate_group;
}

void Settings::check(const sdk::Config& c) {
  from(c);
  // HTTP has no transaction to put the source positions in: the host commits them after
  // this sink's commit, so a crash in between repeats requests. Say so up front.
  if (c.get_string("delivery", "at_least_once") == "exactly_once")
    throw sdk::ConfigError("delivery",
                           "the http sink is at_least_once: a request cannot be taken back. "
                           "Set delivery: at_least_once and let the downstream use the "
                           "idempotency key (idempotency.key)");
}

}  // namespace exactly::http
