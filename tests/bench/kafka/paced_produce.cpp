// bench_paced_produce: the input of the latency benchmark (run_bench.sh --latency). It
// writes the records `kafka-tool produce --keyed` writes (the same JSON values, byte for
// byte, for the same seed: UUID-text messageId, seq, payload; key = messageId; a share of
// duplicates that repeat an earlier record) at a fixed rate, and prints the same JSON line.
//
// Why not the Java tool: on this 2-vCPU machine class the Java producer took ~0.85 of a
// core at 245k records/s (measured: 21 CPU-s for 25 s of sending), more than the pipeline
// under test gets while it runs; the latency benchmark then measured the load generator's
// share of the CPU. librdkafka does the same sending for a fraction of that. The reader
// stays the independent Java read_committed consumer.
//
//   bench_paced_produce --bootstrap B --topic T --count N --rate R [--size 150]
//       [--dup-ratio 0.006] [--seed 7] [--linger-ms 5] [--warmup-topic W --warmup-s S]
//       [--progress-s 5]
//
// stdout: {"topic":..,"produced":..,"distinct_ids":..,"duplicates":..,"seconds":..}
// stderr: progress lines, then "worst send-to-ack ms per second: 0:.. 1:.." (the part of
// an end-to-end latency spent before the input reached the broker).
#include <librdkafka/rdkafka.h>

#include "bench_cli.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kTool = "bench_paced_produce";

[[noreturn]] void die(const std::string& msg) { exactly_bench::die(kTool, msg); }

// Java's kafka-tool mix64 (SplitMix64's finalizer), in unsigned arithmetic like Java's
// wrapping long and >>>.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void hex(std::string& out, uint64_t v, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = digits - 1; i >= 0; --i) out.push_back(kHex[(v >> (4 * i)) & 0xF]);
}

// kafka-tool's recordValue(seed, seq, seq, size): an original record's value.
void record_value(std::string& b, uint64_t seed, uint64_t seq, size_t size) {
  // kFill[byte % 62] for every byte value, looked up instead of divided per character.
  static const auto kByte = [] {
    constexpr std::string_view kFill =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::array<char, 256> t{};
    for (size_t i = 0; i < t.size(); ++i) t[i] = kFill[i % kFill.size()];
    return t;
  }();
  const uint64_t h1 = mix64(seed * 0x9E3779B97F4A7C15ULL + seq);
  const uint64_t h2 = mix64(h1 ^ 0x5DEECE66DULL);
  const uint64_t msb = (h1 & ~0xF000ULL) | 0x4000ULL;
  const uint64_t lsb = (h2 & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
  b.assign("{\"messageId\":\"");
  hex(b, msb >> 32, 8);
  b.push_back('-');
  hex(b, msb >> 16, 4);
  b.push_back('-');
  hex(b, msb, 4);
  b.push_back('-');
  hex(b, lsb >> 48, 4);
  b.push_back('-');
  hex(b, lsb, 12);
  b.append("\",\"seq\":").append(std::to_string(seq)).append(",\"payload\":\"");
  const size_t fill = size > b.size() + 2 ? size - b.size() - 2 : 0;
  // Written in place, eight characters per mix (a push_back per character was 15% of
  // this tool's CPU at 245k records/s, CPU the benchmark's contender then lacked).
  const size_t at = b.size();
  b.resize(at + fill);
  char* out = b.data() + at;
  uint64_t r = mix64(h2 + seq);
  for (size_t i = 0; i < fill; i += 8) {
    r = mix64(r + i);
    const size_t m = std::min<size_t>(8, fill - i);
    for (size_t j = 0; j < m; ++j) out[i + j] = kByte[(r >> (j * 8)) & 0xFF];
  }
  b.append("\"}");
}

struct Acks {
  std::atomic<int64_t> acked{0};
  std::atomic<bool> failed{false};
  std::string first_error;
  int64_t t0_ns = 0;
  std::vector<int64_t> worst_ms = std::vector<int64_t>(4096, 0);  // by second of sending
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// CLOCK_MONOTONIC (steady_clock's) as of the last timer tick: a read per delivery report
// without the full clock's cost, for a figure reported in whole milliseconds (the tick is
// at most a few ms; see clock_getres).
int64_t coarse_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The send time rides in the message's opaque; 0 = not timed (warm-up).
void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* acks = static_cast<Acks*>(opaque);
  if (m->err) {
    if (!acks->failed.exchange(true)) acks->first_error = rd_kafka_err2str(m->err);
    return;
  }
  const auto sent = static_cast<int64_t>(reinterpret_cast<intptr_t>(m->_private));
  if (sent == 0) return;
  acks->acked.fetch_add(1, std::memory_order_relaxed);
  const int64_t sec = std::min<int64_t>((sent - acks->t0_ns) / 1'000'000'000, 4095);
  const int64_t ms = (coarse_now_ns() - sent) / 1'000'000;
  if (sec >= 0) acks->worst_ms[sec] = std::max(acks->worst_ms[sec], ms);
}

struct Args {
  std::string bootstrap, topic, warmup_topic;
  int64_t count = -1, seed = 42;
  double rate = 0, dup_ratio = 0, warmup_s = 0, progress_s = 5;
  size_t size = 150;
  int linger_ms = 5;
};

Args parse(int argc, char** argv) {
  Args a;
  exactly_bench::each_option(kTool, argc, argv, [&](std::string_view k, const char* v) {
    if (k == "--bootstrap") a.bootstrap = v;
    else if (k == "--topic") a.topic = v;
    else if (k == "--count") a.count = std::atoll(v);
    else if (k == "--rate") a.rate = std::atof(v);
    else if (k == "--size") a.size = static_cast<size_t>(std::atoll(v));
    else if (k == "--dup-ratio") a.dup_ratio = std::atof(v);
    else if (k == "--seed") a.seed = std::atoll(v);
    else if (k == "--linger-ms") a.linger_ms = std::atoi(v);
    else if (k == "--warmup-topic") a.warmup_topic = v;
    else if (k == "--warmup-s") a.warmup_s = std::atof(v);
    else if (k == "--progress-s") a.progress_s = std::atof(v);
    else return false;
    return true;
  });
  if (a.bootstrap.empty() || a.topic.empty() || a.count < 0 || a.rate <= 0)
    die("needs --bootstrap, --topic, --count and --rate > 0");
  if (a.dup_ratio < 0 || a.dup_ratio >= 1) die("--dup-ratio must be in [0,1)");
  return a;
}

rd_kafka_t* make_producer(const Args& a, Acks* acks) {
  // As kafka-tool produce: idempotent, acks=all, 256 KiB batches, a deep queue; the
  // Java default partitioner (murmur2 of the key), so duplicates share a partition.
  const exactly_bench::Property props[] = {
      {"bootstrap.servers", a.bootstrap},
      {"client.id", "exactly-bench-paced-produce"},
      {"enable.idempotence", "true"},
      {"acks", "all"},
      {"linger.ms", std::to_string(a.linger_ms)},
      {"batch.size", "262144"},
      {"queue.buffering.max.kbytes", "131072"},
      {"queue.buffering.max.messages", "2000000"},
      {"message.timeout.ms", "300000"},
      {"partitioner", "murmur2_random"},
  };
  return exactly_bench::make_client(kTool, RD_KAFKA_PRODUCER, props, [&](rd_kafka_conf_t* conf) {
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, acks);
  });
}

// By handle: a topic name is looked up (under the client's lock) on every call.
void send(rd_kafka_t* rk, rd_kafka_topic_t* rkt, const std::string& value, int64_t sent_ns) {
  for (;;) {
    const rd_kafka_resp_err_t e = rd_kafka_producev(
        rk, RD_KAFKA_V_RKT(rkt),
        RD_KAFKA_V_KEY(const_cast<char*>(value.data() + 14), 36),
        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<intptr_t>(sent_ns))), RD_KAFKA_V_END);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) die(std::string("produce: ") + rd_kafka_err2str(e));
    rd_kafka_poll(rk, 1);
  }
}

// Record n is due at t0 + n / rate; wait (serving delivery reports) once >= 1 ms ahead.
// Returns the time it was sent at. The clock is read for every 8th record (33 us apart
// at 245k/s): its reads were a tenth of this tool's CPU.
int64_t pace(rd_kafka_t* rk, int64_t t0, int64_t n, double rate, int64_t& last) {
  if ((n & 7) != 0 && last != 0) return last;
  const int64_t now = last = now_ns();
  const int64_t ahead = t0 + static_cast<int64_t>(static_cast<double>(n) * 1e9 / rate) - now;
  if (ahead < 1'000'000) return now;
  rd_kafka_poll(rk, static_cast<int>(ahead / 1'000'000));
  return last = now_ns();
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  Acks acks;
  rd_kafka_t* rk = make_producer(a, &acks);
  std::string value;
  value.reserve(std::max<size_t>(a.size, 96) + 32);

  // The broker's produce path sees the same traffic first, on a topic nobody reads.
  if (!a.warmup_topic.empty() && a.warmup_s > 0) {
    rd_kafka_topic_t* wrkt = rd_kafka_topic_new(rk, a.warmup_topic.c_str(), nullptr);
    if (wrkt == nullptr) die("topic " + a.warmup_topic + ": " + rd_kafka_err2str(rd_kafka_last_error()));
    const int64_t w0 = now_ns(), end = w0 + static_cast<int64_t>(a.warmup_s * 1e9);
    int64_t last = 0;
    for (int64_t w = 0; last < end && !acks.failed; ++w) {
      pace(rk, w0, w, a.rate, last);
      record_value(value, static_cast<uint64_t>(a.seed) ^ 0x5DEECE66DULL, w, a.size);
      send(rk, wrkt, value, 0);
      if ((w & 1023) == 0) rd_kafka_poll(rk, 0);
    }
    rd_kafka_flush(rk, 60'000);
    rd_kafka_topic_destroy(wrkt);
  }

  // The topic's metadata before the clock starts, as the Java tool's partitionsFor: the
  // first records would otherwise wait for it and open the run with a burst.
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, a.topic.c_str(), nullptr);
  if (rkt == nullptr) die("topic " + a.topic + ": " + rd_kafka_err2str(rd_kafka_last_error()));
  {
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, 30'000);
    if (e) die("metadata of " + a.topic + ": " + rd_kafka_err2str(e));
    rd_kafka_metadata_destroy(md);
  }

  // Duplicates repeat a uniformly chosen earlier original (as kafka-tool's default
  // --dup-window 0); the choice is seeded, though not kafka-tool's Java RNG.
  std::vector<int64_t> originals;
  originals.reserve(static_cast<size_t>(a.count));
  uint64_t rng = mix64(static_cast<uint64_t>(a.seed) ^ 0x2545F4914F6CDD1DULL);
  auto next = [&rng] { return mix64(rng += 0x9E3779B97F4A7C15ULL); };

  const int64_t t0 = now_ns();
  acks.t0_ns = t0;
  const int64_t progress_ns = static_cast<int64_t>(a.progress_s * 1e9);
  int64_t next_progress = t0 + progress_ns;
  int64_t sent = 0, last = 0;
  for (int64_t i = 0; i < a.count && !acks.failed; ++i) {
    const int64_t now = pace(rk, t0, sent, a.rate, last);
    if (progress_ns > 0 && now >= next_progress) {
      const double el = static_cast<double>(now - t0) / 1e9;
      std::fprintf(stderr, "bench_paced_produce: %s: %lld/%lld sent, %lld acked, %.1f s, %.0f records/s\n",
                   a.topic.c_str(), static_cast<long long>(sent), static_cast<long long>(a.count),
                   static_cast<long long>(acks.acked.load()), el, static_cast<double>(sent) / el);
      next_progress = now + progress_ns;
    }
    int64_t src = i;
    const bool dup = !originals.empty() && a.dup_ratio > 0 &&
                     static_cast<double>(next() >> 11) * 0x1.0p-53 < a.dup_ratio;
    if (dup) src = originals[next() % originals.size()];
    else originals.push_back(i);
    record_value(value, static_cast<uint64_t>(a.seed), static_cast<uint64_t>(src), a.size);
    send(rk, rkt, value, now);
    ++sent;
    if ((sent & 1023) == 0) rd_kafka_poll(rk, 0);
  }
  while (rd_kafka_outq_len(rk) > 0 && !acks.failed) rd_kafka_poll(rk, 100);
  const double secs = static_cast<double>(now_ns() - t0) / 1e9;
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  if (acks.failed) die("send failed: " + acks.first_error);

  std::string tl = "bench_paced_produce: worst send-to-ack ms per second:";
  for (int s = 0; s < 4096 && s < secs; ++s)
    tl.append(" ").append(std::to_string(s)).append(":").append(std::to_string(acks.worst_ms[s]));
  std::fprintf(stderr, "%s\n", tl.c_str());
  const auto acked = static_cast<long long>(acks.acked.load());
  const auto distinct = static_cast<long long>(originals.size());
  std::printf("{\"topic\":\"%s\",\"produced\":%lld,\"distinct_ids\":%lld,\"duplicates\":%lld,\"seconds\":%.2f}\n",
              a.topic.c_str(), acked, distinct, acked - distinct, secs);
  return acked == sent ? 0 : 2;
}
