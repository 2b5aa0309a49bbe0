// bench_latency_reader: the read_committed reader of the latency benchmark
// (run_bench.sh --latency). For every record of the output topic it takes the wall clock
// at receipt minus the record's timestamp (CreateTime, set by the input's producer and
// carried through by the pipeline under test; same machine, same clock), as
// `kafka-tool latency` does, and prints the same JSON line and per-second timeline.
//
// Why not the Java reader: on this 2-vCPU machine class the four processes of a latency
// case (broker, pipeline, producer, reader) nearly fill both cores at 245k records/s, and
// whatever the load generator and the reader take, the pipeline under test does not get:
// the Java consumer took 15.7-18.0 CPU-seconds of a 68 s case (with its JIT warm-up
// read), this one 6.8-7.4.
// `--reader java` keeps kafka-tool's.
//
//   bench_latency_reader --bootstrap B --topic T [--warmup-s 10] [--expect-file F]
//       [--idle-timeout-s 60]
//
// It starts before the input is produced, reads every partition from the beginning, and
// ends once it has received the count written to --expect-file (written when the input
// is complete), or --idle-timeout-s after the last record. Records stamped within
// --warmup-s of the first one are counted but not measured (startup, first rebalance).
// Exit 0 when the expected count arrived.
//
// stdout: {"topic":..,"received":..,"expected":..,"measured":..,"p50_ms":..,"p90_ms":..,
//          "p99_ms":..,"p999_ms":..,"max_ms":..}
// stderr: "bench_latency_reader: worst ms per second of input (second 0 = T ms since the
//          epoch): 10:.. 11:.."
#include <librdkafka/rdkafka.h>

#include "bench_cli.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* kTool = "bench_latency_reader";

[[noreturn]] void die(const std::string& msg) { exactly_bench::die(kTool, msg); }

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Args {
  std::string bootstrap, topic, expect_file;
  double warmup_s = 10, idle_timeout_s = 60;
};

Args parse(int argc, char** argv) {
  Args a;
  exactly_bench::each_option(kTool, argc, argv, [&](std::string_view k, const char* v) {
    if (k == "--bootstrap") a.bootstrap = v;
    else if (k == "--topic") a.topic = v;
    else if (k == "--warmup-s") a.warmup_s = std::atof(v);
    else if (k == "--expect-file") a.expect_file = v;
    else if (k == "--idle-timeout-s") a.idle_timeout_s = std::atof(v);
    else return false;
    return true;
  });
  if (a.bootstrap.empty() || a.topic.empty()) die("needs --bootstrap and --topic");
  return a;
}

rd_kafka_t* make_consumer(const Args& a) {
  const exactly_bench::Property props[] = {
      {"bootstrap.servers", a.bootstrap},
      {"client.id", "exactly-bench-latency-reader"},
      // Partitions are assigned by hand; the group is never joined nor committed to.
      {"group.id", "exactly-bench-latency-reader"},
      {"enable.auto.commit", "false"},
      {"enable.auto.offset.store", "false"},
      {"auto.offset.reset", "earliest"},
      {"isolation.level", "read_committed"},
      // A reader that waits for bytes would add its own wait to what it measures (as the
      // Java reader's fetch.max.wait.ms 10).
      {"fetch.wait.max.ms", "10"},
      {"fetch.min.bytes", "1"},
      {"allow.auto.create.topics", "false"},
  };
  return exactly_bench::make_client(kTool, RD_KAFKA_CONSUMER, props, [](rd_kafka_conf_t*) {});
}

// The topic is created just before the reader starts: its metadata may lag.
int wait_for_partitions(rd_kafka_t* rk, const std::string& topic) {
  for (int attempt = 0; attempt < 30; ++attempt) {
    const int n = exactly_bench::partition_count(rk, topic);
    if (n > 0) return n;
    rd_kafka_poll(rk, 1000);
  }
  die("topic " + topic + " has no partitions after 30 attempts");
}

// -1 while the file is missing or empty: the input is still being produced.
int64_t read_expect(const std::string& path) {
  std::ifstream f(path);
  int64_t v = -1;
  if (f && (f >> v)) return v;
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  rd_kafka_t* rk = make_consumer(a);
  const int parts = wait_for_partitions(rk, a.topic);
  rd_kafka_topic_partition_list_t* tps = rd_kafka_topic_partition_list_new(parts);
  for (int p = 0; p < parts; ++p)
    rd_kafka_topic_partition_list_add(tps, a.topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  if (rd_kafka_resp_err_t e = rd_kafka_assign(rk, tps)) die(std::string("assign: ") + rd_kafka_err2str(e));
  rd_kafka_topic_partition_list_destroy(tps);
  rd_kafka_queue_t* q = rd_kafka_queue_get_consumer(rk);

  // Counts per millisecond of latency, as the Java reader: 10 minutes or more share the
  // last bucket.
  std::vector<int64_t> hist(600'001, 0);
  // The worst latency by second of the record's timestamp (since the first) and partition,
  // at second * parts + partition: a late spell in one partition is a fetch of that
  // partition, in all of them the broker, the contender or the machine.
  std::vector<int64_t> worst(16 * static_cast<size_t>(parts), 0);
  const int64_t warmup_ms = static_cast<int64_t>(a.warmup_s * 1000);
  const int64_t idle_ms = static_cast<int64_t>(a.idle_timeout_s * 1000);
  int64_t received = 0, measured = 0, expect = -1, first = -1, max_ms = 0;
  int64_t last_record = wall_ms();
  std::string failure;
  constexpr size_t kBatch = 10000;
  std::unique_ptr<rd_kafka_message_t*[]> msgs(new rd_kafka_message_t*[kBatch]);
  // With a hand-made assignment there are no rebalances: the batch call is safe here.
  while (failure.empty()) {
    const ssize_t n = rd_kafka_consume_batch_queue(q, 20, msgs.get(), kBatch);
    const int64_t now = wall_ms();
    if (n < 0) die(std::string("consume: ") + rd_kafka_err2str(rd_kafka_last_error()));
    bool got = false;
    for (ssize_t i = 0; i < n; ++i) {
      rd_kafka_message_t* m = msgs[i];
      if (m->err) {
        // Transient fetch errors are retried by librdkafka; anything that reaches here
        // ends the reading with the error named.
        failure = rd_kafka_message_errstr(m);
      } else {
        got = true;
        ++received;
        const int64_t ts = rd_kafka_message_timestamp(m, nullptr);
        if (first < 0) first = ts;
        if (ts >= first + warmup_ms) {
          const int64_t l = std::max<int64_t>(0, now - ts);
          ++hist[static_cast<size_t>(std::min<int64_t>(l, static_cast<int64_t>(hist.size()) - 1))];
          ++measured;
          max_ms = std::max(max_ms, l);
          const auto sec = static_cast<size_t>((ts - first) / 1000);
          const size_t cell = sec * static_cast<size_t>(parts) +
                              static_cast<size_t>(std::clamp<int32_t>(m->partition, 0, parts - 1));
          if (cell >= worst.size()) worst.resize(std::max(cell + 1, worst.size() * 2), 0);
          worst[cell] = std::max(worst[cell], l);
        }
      }
      rd_kafka_message_destroy(m);
    }
    if (got) last_record = now;
    if (expect < 0 && !a.expect_file.empty()) expect = read_expect(a.expect_file);
    if (expect >= 0 && received >= expect) break;
    if (now - last_record > idle_ms) {
      std::fprintf(stderr, "bench_latency_reader: nothing new for %lld s after %lld records%s\n",
                   static_cast<long long>(idle_ms / 1000), static_cast<long long>(received),
                   expect >= 0 ? (" of " + std::to_string(expect)).c_str() : "");
      break;
    }
  }
  if (!failure.empty()) std::fprintf(stderr, "bench_latency_reader: %s\n", failure.c_str());
  rd_kafka_queue_destroy(q);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);

  // Where in the run the tail came from: the worst latency of each second's records.
  std::string tl = "bench_latency_reader: worst ms per second of input (second 0 = " +
                   std::to_string(first) + " ms since the epoch):";
  // The seconds past 250 ms (the latency target) by partition.
  std::string lp = "bench_latency_reader: seconds over 250 ms, worst ms by partition:";
  const size_t seconds = worst.size() / static_cast<size_t>(parts);
  for (size_t i = static_cast<size_t>(warmup_ms / 1000); i < seconds; ++i) {
    const auto row = worst.begin() + static_cast<std::ptrdiff_t>(i * static_cast<size_t>(parts));
    const int64_t w = *std::max_element(row, row + parts);
    if (w > 0) tl.append(" ").append(std::to_string(i)).append(":").append(std::to_string(w));
    if (w <= 250) continue;
    lp.append(" ").append(std::to_string(i)).append(":");
    for (int p = 0; p < parts; ++p) lp.append(p == 0 ? "" : "/").append(std::to_string(row[p]));
  }
  std::fprintf(stderr, "%s\n", tl.c_str());
  std::fprintf(stderr, "%s\n", lp.c_str());
  // The value at rank floor(q * measured) of the sorted latencies (0-based), as the Java
  // reader computes it.
  auto pct = [&](double q) -> int64_t {
    if (measured == 0) return -1;
    const int64_t rank = std::min<int64_t>(measured - 1, static_cast<int64_t>(std::floor(q * static_cast<double>(measured))));
    int64_t seen = 0;
    for (size_t ms = 0; ms < hist.size(); ++ms) {
      seen += hist[ms];
      if (seen > rank) return static_cast<int64_t>(ms);
    }
    return static_cast<int64_t>(hist.size()) - 1;
  };
  std::printf(
      "{\"topic\":\"%s\",\"received\":%lld,\"expected\":%lld,\"measured\":%lld,\"p50_ms\":%lld,"
      "\"p90_ms\":%lld,\"p99_ms\":%lld,\"p999_ms\":%lld,\"max_ms\":%lld}\n",
      a.topic.c_str(), static_cast<long long>(received), static_cast<long long>(expect),
      static_cast<long long>(measured), static_cast<long long>(pct(0.50)),
      static_cast<long long>(pct(0.90)), static_cast<long long>(pct(0.99)),
      static_cast<long long>(pct(0.999)), static_cast<long long>(measured == 0 ? -1 : max_ms));
  return failure.empty() && expect >= 0 && received >= expect ? 0 : 1;
}
