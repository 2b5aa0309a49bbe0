// bench_raw_copy: the reference "limit" for the Kafka benchmarks. A plain librdkafka
// consume -> produce loop with nothing the host adds: no transactions, no commit
// protocol, no plugin ABI, no offsets committed. It reads the input topic from the
// beginning in its own fresh group and writes each record to the same partition of the
// output topic until --count records were copied and delivered, then prints one JSON
// line (wall time from process start, CPU seconds, peak RSS).
//
//   bench_raw_copy --bootstrap B --input IN --output OUT --count N
//                  [--group G] [--batch 10000] [--linger-ms 5] [--timeout-s 900]
//                  [--poll batch|single] [--consumer-prop k=v]... [--producer-prop k=v]...
//                  [--keep-timestamps 1]
//
// --keep-timestamps 1 gives each output record its input record's timestamp (as exactly's
// kafka sink does): the latency benchmark's case a, which times each record from the
// moment it was produced to the input, and so measures the copy's share of a latency.
// Tuned the way one would tune a copier by hand: batch consume from the consumer queue,
// an idempotent producer (acks=all, like every other contender) with large batches and
// a deep queue, Nagle off, and a deep consumer prefetch: librdkafka 2.0.2 drops a
// partition whose queue reached queued.min.messages (default 100000) from the fetch list
// and looks at it again only ~1 s later, which halves a fast reader's rate; and 8 MiB
// per partition per fetch instead of 1 MiB (1.10x, as for exactly's source). The consumer
// reads read_committed like exactly's source and the Streams app, which costs nothing
// on a non-transactional input.
#include "fetch_waker.hpp"
#include "proc_stats.hpp"

#include <librdkafka/rdkafka.h>

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string bootstrap, input, output, group;
  int64_t count = -1;
  int batch = 10000;
  int linger_ms = 5;
  int timeout_s = 900;
  // batch: rd_kafka_consume_batch_queue; single: one rd_kafka_consumer_poll per record,
  // the way exactly's kafka source reads (to tell the two costs apart).
  bool single = false;
  bool keep_timestamps = false;
  // The kafka source's fetch wake-ups (plugins/kafka/fetch_waker.hpp): librdkafka 2.0.2
  // stops fetching at a full prefetch queue until its broker thread next wakes up.
  bool wake_fetch = false;
  std::vector<std::pair<std::string, std::string>> consumer_props, producer_props;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "bench_raw_copy: %s\nusage: bench_raw_copy --bootstrap B --input IN --output OUT "
               "--count N [--group G] [--batch 10000] [--linger-ms 5] [--timeout-s 900] "
               "[--poll batch|single] [--consumer-prop k=v]... [--producer-prop k=v]... "
               "[--keep-timestamps 1] [--wake-fetch 1]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (i + 1 >= argc) usage(("missing value for " + std::string(a)).c_str());
    const char* v = argv[++i];
    if (a == "--bootstrap") o.bootstrap = v;
    else if (a == "--input") o.input = v;
    else if (a == "--output") o.output = v;
    else if (a == "--group") o.group = v;
    else if (a == "--count") o.count = std::atoll(v);
    else if (a == "--batch") o.batch = std::atoi(v);
    else if (a == "--linger-ms") o.linger_ms = std::atoi(v);
    else if (a == "--timeout-s") o.timeout_s = std::atoi(v);
    else if (a == "--keep-timestamps") {
      if (std::string_view(v) != "0" && std::string_view(v) != "1")
        usage("--keep-timestamps must be 0 or 1");
      o.keep_timestamps = std::string_view(v) == "1";
    }
    else if (a == "--wake-fetch") {
      if (std::string_view(v) != "0" && std::string_view(v) != "1")
        usage("--wake-fetch must be 0 or 1");
      o.wake_fetch = std::string_view(v) == "1";
    }
    else if (a == "--consumer-prop" || a == "--producer-prop") {
      std::string kv = v;
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) usage((std::string(a) + " needs key=value").c_str());
      (a == "--consumer-prop" ? o.consumer_props : o.producer_props)
          .emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (a == "--poll") {
      if (std::string_view(v) != "batch" && std::string_view(v) != "single")
        usage("--poll must be batch or single");
      o.single = std::string_view(v) == "single";
    }
    else usage(("unknown option " + std::string(a)).c_str());
  }
  if (o.bootstrap.empty() || o.input.empty() || o.output.empty() || o.count <= 0)
    usage("--bootstrap, --input, --output and a positive --count are required");
  if (o.batch <= 0) usage("--batch must be positive");
  if (o.group.empty())
    o.group = "bench-raw-copy-" + std::to_string(::getpid()) + "-" +
              std::to_string(Clock::now().time_since_epoch().count());
  return o;
}

void set(rd_kafka_conf_t* c, const char* k, const std::string& v) {
  char err[512];
  if (rd_kafka_conf_set(c, k, v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
    std::fprintf(stderr, "bench_raw_copy: %s=%s: %s\n", k, v.c_str(), err);
    std::exit(2);
  }
}

rd_kafka_t* create(rd_kafka_type_t type, rd_kafka_conf_t* c) {
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(type, c, err, sizeof err);
  if (rk == nullptr) {
    std::fprintf(stderr, "bench_raw_copy: rd_kafka_new: %s\n", err);
    std::exit(2);
  }
  return rk;
}

std::atomic<int64_t> g_delivered{0};
std::atomic<int64_t> g_failed{0};

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (g_failed.fetch_add(1) == 0)
      std::fprintf(stderr, "bench_raw_copy: delivery failed: %s\n", rd_kafka_err2str(m->err));
  } else {
    g_delivered.fetch_add(1, std::memory_order_relaxed);
  }
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const auto t0 = Clock::now();
  const Options o = parse(argc, argv);

  rd_kafka_conf_t* cc = rd_kafka_conf_new();
  set(cc, "bootstrap.servers", o.bootstrap);
  set(cc, "group.id", o.group);
  set(cc, "auto.offset.reset", "earliest");
  set(cc, "enable.auto.commit", "false");
  set(cc, "enable.auto.offset.store", "false");
  set(cc, "isolation.level", "read_committed");
  set(cc, "enable.partition.eof", "false");
  set(cc, "socket.nagle.disable", "true");
  set(cc, "partition.assignment.strategy", "range");
  set(cc, "queued.min.messages", "1000000");
  set(cc, "max.partition.fetch.bytes", "8388608");
  for (const auto& [k, v] : o.consumer_props) set(cc, k.c_str(), v);
  rd_kafka_t* consumer = create(RD_KAFKA_CONSUMER, cc);
  rd_kafka_poll_set_consumer(consumer);

  rd_kafka_conf_t* pc = rd_kafka_conf_new();
  set(pc, "bootstrap.servers", o.bootstrap);
  set(pc, "enable.idempotence", "true");
  set(pc, "linger.ms", std::to_string(o.linger_ms));
  set(pc, "batch.num.messages", "10000");
  set(pc, "batch.size", "1000000");
  set(pc, "queue.buffering.max.messages", "1000000");
  set(pc, "queue.buffering.max.kbytes", "1048576");
  set(pc, "socket.nagle.disable", "true");
  for (const auto& [k, v] : o.producer_props) set(pc, k.c_str(), v);
  rd_kafka_conf_set_dr_msg_cb(pc, on_delivery);
  rd_kafka_t* producer = create(RD_KAFKA_PRODUCER, pc);
  rd_kafka_topic_t* out = rd_kafka_topic_new(producer, o.output.c_str(), nullptr);

  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, o.input.c_str(), RD_KAFKA_PARTITION_UA);
  if (rd_kafka_resp_err_t e = rd_kafka_subscribe(consumer, topics); e) {
    std::fprintf(stderr, "bench_raw_copy: subscribe: %s\n", rd_kafka_err2str(e));
    return 2;
  }
  rd_kafka_topic_partition_list_destroy(topics);

  rd_kafka_queue_t* q = rd_kafka_queue_get_consumer(consumer);
  std::unique_ptr<exactly::kafka::FetchWaker> waker;
  if (o.wake_fetch) waker = std::make_unique<exactly::kafka::FetchWaker>(consumer);
  std::vector<rd_kafka_message_t*> msgs(static_cast<size_t>(o.batch));
  int64_t copied = 0;
  double first_record_s = -1;
  const auto deadline = t0 + std::chrono::seconds(o.timeout_s);
  int rc = 0;
  while (copied < o.count) {
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "bench_raw_copy: timeout after %d s with %lld of %lld copied\n",
                   o.timeout_s, static_cast<long long>(copied), static_cast<long long>(o.count));
      rc = 1;
      break;
    }
    ssize_t n = 0;
    if (o.single) {
      for (int t = 100; n < static_cast<ssize_t>(msgs.size()); t = 0) {
        rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, t);
        if (m == nullptr) break;
        msgs[static_cast<size_t>(n++)] = m;
      }
    } else {
      n = rd_kafka_consume_batch_queue(q, 100, msgs.data(), msgs.size());
    }
    if (n < 0) {
      std::fprintf(stderr, "bench_raw_copy: consume: %s\n", rd_kafka_err2str(rd_kafka_last_error()));
      rc = 2;
      break;
    }
    if (waker) {
      uint64_t bytes = 0;
      for (ssize_t i = 0; i < n; ++i) bytes += msgs[static_cast<size_t>(i)]->len;
      waker->observe(rd_kafka_queue_length(q), bytes, static_cast<size_t>(n),
                     std::chrono::duration_cast<std::chrono::milliseconds>(
                         Clock::now().time_since_epoch()).count());
    }
    for (ssize_t i = 0; i < n; ++i) {
      rd_kafka_message_t* m = msgs[static_cast<size_t>(i)];
      if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        std::fprintf(stderr, "bench_raw_copy: consumer error: %s\n", rd_kafka_message_errstr(m));
        rd_kafka_message_destroy(m);
        continue;
      }
      if (copied < o.count) {
        if (first_record_s < 0) first_record_s = seconds_since(t0);
        for (;;) {
          rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
          if (o.keep_timestamps)
            e = rd_kafka_producev(producer, RD_KAFKA_V_RKT(out), RD_KAFKA_V_PARTITION(m->partition),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                  RD_KAFKA_V_VALUE(m->payload, m->len),
                                  RD_KAFKA_V_KEY(m->key, m->key_len),
                                  RD_KAFKA_V_TIMESTAMP(rd_kafka_message_timestamp(m, nullptr)),
                                  RD_KAFKA_V_END);
          else if (rd_kafka_produce(out, m->partition, RD_KAFKA_MSG_F_COPY, m->payload, m->len,
                                    m->key, m->key_len, nullptr) != 0)
            e = rd_kafka_last_error();
          if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
          if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            std::fprintf(stderr, "bench_raw_copy: produce: %s\n", rd_kafka_err2str(e));
            return 2;
          }
          rd_kafka_poll(producer, 5);
        }
        ++copied;
      }
      rd_kafka_message_destroy(m);
    }
    rd_kafka_poll(producer, 0);
  }
  while (rc == 0 && rd_kafka_outq_len(producer) > 0) {
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "bench_raw_copy: timeout while flushing\n");
      rc = 1;
      break;
    }
    rd_kafka_flush(producer, 1000);
  }
  const double wall = seconds_since(t0);
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  if (g_failed.load() > 0) rc = 1;
  std::printf(
      "{\"records\":%lld,\"delivered\":%lld,\"failed\":%lld,\"seconds\":%.3f,"
      "\"first_record_s\":%.3f,\"records_per_s\":%.0f,\"cpu_s\":%.2f,\"peak_rss_kb\":%ld,"
      "\"threads\":%s}\n",
      static_cast<long long>(copied), static_cast<long long>(g_delivered.load()),
      static_cast<long long>(g_failed.load()), wall, first_record_s,
      static_cast<double>(copied) / wall, cpu, ru.ru_maxrss,
      exactly_bench::threads_json(::getpid(), 8).c_str());
  std::fflush(stdout);

  rd_kafka_queue_destroy(q);
  if (waker) waker->stop();
  rd_kafka_consumer_close(consumer);
  rd_kafka_destroy(consumer);
  rd_kafka_topic_destroy(out);
  rd_kafka_destroy(producer);
  return rc;
}
