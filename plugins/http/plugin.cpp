#include <exactly/sdk.hpp>

#include "http_sink.hpp"

namespace {

using exactly::sdk::field;
using exactly::sdk::required;

const char* const kMethods[] = {"POST", "PUT", "PATCH", "GET", "DELETE", nullptr};
const char* const kDelivery[] = {"at_least_once", "exactly_once", nullptr};
const char* const kWhenLimited[] = {"backpressure", "reroute", nullptr};
const char* const kWhenFused[] = {"reject", "reroute", nullptr};

const ex_config_field kSinkFields[] = {
    required("url", EX_CFG_STRING,
             "request URL; {/json/pointer}, {header:name} and {key} are replaced by the "
             "record's field, percent-encoded"),
    field("method", EX_CFG_STRING, "HTTP method; GET and DELETE send no body", "POST", kMethods),
    field("headers", EX_CFG_MAP, "static request headers, name: value; the values of credential headers (Authorization, X-Api-Key, Cookie, ...) are masked in the host's logs"),
    field("forward.record.headers", EX_CFG_BOOL,
          "send the record's headers as request headers (configured ones win; a re-enqueued "
          "record's exactly.retry.count and exactly.not-before go too, its "
          "exactly.retry.reason does not)", "true"),
    field("content.type", EX_CFG_STRING, "Content-Type of the body (the record value)",
          "application/json"),
    field("idempotency.key", EX_CFG_STRING,
          "field whose value is sent as the idempotency header on every attempt: a JSON "
          "pointer (/id), key or header:<name>; a record without it is a record error",
          ""),
    field("idempotency.header", EX_CFG_STRING, "name of the idempotency header",
          "Idempotency-Key"),
    field("max.in.flight", EX_CFG_INT, "requests outstanding at once (1..4096)", "64"),
    field("window.records", EX_CFG_INT,
          "records written but not yet final (in flight, waiting to retry) across batches; "
          "write() takes its whole batch, then blocks while the window is full (so it may "
          "exceed this by one batch). The committed position stays at each partition's "
          "lowest incomplete record",
          "10000"),
    field("window.bytes", EX_CFG_SIZE, "bytes (value, key, headers) of the records in the window",
          "67108864"),
    field("connect.timeout", EX_CFG_DURATION, "TCP + TLS connect timeout (at least 1ms)", "5000"),
    field("request.timeout", EX_CFG_DURATION, "whole-request timeout (at least 1ms); a timeout is retried",
          "30000"),
    field("tls.ca.file", EX_CFG_STRING, "CA bundle (PEM) to verify the server with; empty = "
          "the system's", ""),
    field("tls.verify", EX_CFG_BOOL, "verify the server certificate and host name", "true"),
    field("retry.max", EX_CFG_INT,
          "retries after the first attempt for connection errors, timeouts, 408, 429 and "
          "5xx; then the record goes to the error policy",
          "10"),
    field("retry.backoff.initial", EX_CFG_DURATION, "first retry delay (doubles, jittered)",
          "100"),
    field("retry.backoff.max", EX_CFG_DURATION, "longest retry delay", "10000"),
    field("retry.after.max", EX_CFG_DURATION,
          "longest Retry-After (429/503) honoured; the whole class waits that long", "60000"),
    field("response.body.max", EX_CFG_SIZE,
          "bytes of an error response kept for the dead-letter reason", "512"),
    field("class.field", EX_CFG_STRING,
          "field naming a record's rate class (JSON pointer, key or header:<name>); "
          "missing or unlisted values use the class 'default'",
          ""),
    field("classes", EX_CFG_MAP,
          "rate classes: <name>: {rate: per second (0 = unlimited), burst, open: true to "
          "fuse by hand, fuse.failures, fuse.cooldown, when.limited, when.fused}; 'default' "
          "is the fallback class"),
    field("rate.group", EX_CFG_STRING,
          "http sinks of this host with the same rate.group share each class's rate (one "
          "token bucket per class name) and a Retry-After pause: set it on a pipeline and "
          "the one that reads its retry topic, which send to the same API. Empty = this "
          "sink's own",
          ""),
    field("fuse.failures", EX_CFG_INT,
          "consecutive connection errors/timeouts/5xx of a class that open its fuse (0 = "
          "never); every class unless it sets its own",
          "0"),
    field("fuse.cooldown", EX_CFG_DURATION,
          "how long an opened fuse turns records away before one probe request is let "
          "through",
          "10000"),
    field("when.limited", EX_CFG_STRING,
          "what a class over its rate (or paused by a Retry-After) does: backpressure (its "
          "records wait) or reroute (those whose turn is more than reroute.wait.max away go "
          "to the retry topic); every class unless it sets its own (classes.<name>.when.limited)",
          "backpressure", kWhenLimited),
    field("when.fused", EX_CFG_STRING,
          "what a class with an open fuse does with its records: reject (a record error) or "
          "reroute (to the retry topic, not-before = when the fuse half-opens); every class "
          "unless it sets its own (classes.<name>.when.fused)",
          "reject", kWhenFused),
    field("reroute.wait.max", EX_CFG_DURATION,
          "with when.limited: reroute, the longest a record waits for its class's rate before "
          "it goes to the retry topic instead",
          "1000"),
    field("retry.topic", EX_CFG_STRING,
          "Kafka topic for records to try later: after retry.max inline retries of a "
          "retriable failure, and for reroute; written with exactly.retry.count, "
          "exactly.not-before (epoch ms) and exactly.retry.reason (the last failure, one line "
          "of at most 512 bytes) headers, acknowledged before the round commits. "
          "Empty = off (such records are record errors)",
          ""),
    field("retry.topic.bootstrap.servers", EX_CFG_STRING,
          "brokers of the retry topic's cluster (required with retry.topic)", ""),
    field("retry.topic.rdkafka", EX_CFG_MAP,
          "librdkafka producer properties for the retry topic (security.protocol, sasl.*, "
          "ssl.*, ...); the producer is always idempotent"),
    field("retry.topic.max", EX_CFG_INT,
          "how many times one record may be re-enqueued after failed attempts (its "
          "exactly.retry.count); past it the record goes to the error policy (0..1000)",
          "3"),
    field("retry.topic.backoff.initial", EX_CFG_DURATION,
          "not-before delay of the first re-enqueue (doubles per re-enqueue, jittered)", "1000"),
    field("retry.topic.backoff.max", EX_CFG_DURATION, "longest not-before delay", "300000"),
    field("retry.topic.open.timeout", EX_CFG_DURATION,
          "how long open() waits for the retry topic's cluster (retriable failure after)",
          "30000"),
    field("delivery", EX_CFG_STRING, "set from the pipeline; must be at_least_once",
          "at_least_once", kDelivery),
};

}  // namespace

EXACTLY_PLUGIN("http", "0.1.0",
               exactly::sdk::sink<exactly::http::HttpSink>(
                   "http",
                   "One HTTP request per record (libcurl): templated URL, idempotency key, "
                   "many in flight, retries, per-class rate limits and fuses; at_least_once",
                   kSinkFields))
