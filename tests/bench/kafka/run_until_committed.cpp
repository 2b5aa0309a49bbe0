// bench_run_until_committed: starts a consumer-group application (exactly, the Kafka
// Streams app), measures how long it takes until its group's committed offsets cover
// the whole input, then stops it with SIGTERM and prints one JSON line.
//
//   bench_run_until_committed --bootstrap B --group G --topic IN --target N
//       [--broker-pid P] [--interval-ms 20] [--timeout-s 900] [--stop-timeout-s 60]
//       [--log FILE] [--on-done 'shell command'] -- COMMAND ARGS...
//   bench_run_until_committed --end-offsets --bootstrap B --topic OUT --target N ... -- COMMAND
//
// Committed offsets are the finish line because they are what every contender commits
// last: exactly's exactly_once sink and Streams' exactly_once_v2 commit them in the
// transaction with the output; at_least_once commits them after the output was flushed.
// Offsets are read with OffsetFetch (require_stable under read_committed), so a
// transaction still open does not count. CPU and peak RSS are read from /proc at the
// moment the target is reached, so shutdown does not count. It runs in its own process
// so the measured one carries no measuring code; its own cost is one OffsetFetch per
// interval. The interval is 20 ms (it was 100 until 2026-12-05): the finish line is seen
// up to one interval late, and the raw copy, which times itself, has no such delay; 100
// ms were up to 3% of a 2M-record run of c (~3.1 s), half that on average
// (docs/benchmarks.md, "Records without headers").
//
// --end-offsets is for a contender with no consumer group to watch (Kafka Connect running
// MirrorMaker 2's MirrorSourceConnector keeps its source offsets in Connect's offset
// store): the finish line is then the sum of --topic's end offsets (high watermarks, one
// ListOffsets per partition per interval) reaching --target, i.e. the output is all there;
// --group is not needed. first_commit_s is then the time to the first output record.
#include "bench_cli.hpp"
#include "proc_stats.hpp"

#include <librdkafka/rdkafka.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using exactly_bench::cpu_seconds;
using exactly_bench::partition_count;
using exactly_bench::peak_rss_kb;
using exactly_bench::threads_json;

using Clock = std::chrono::steady_clock;

struct Options {
  std::string bootstrap, group, topic, log, on_done;
  int64_t target = -1;
  int broker_pid = 0;
  int interval_ms = 20;
  int timeout_s = 900;
  int stop_timeout_s = 60;
  bool end_offsets = false;
  std::vector<char*> command;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "bench_run_until_committed: %s\nusage: bench_run_until_committed --bootstrap B "
               "--group G --topic IN --target N [--broker-pid P] [--interval-ms 20] "
               "[--timeout-s 900] [--stop-timeout-s 60] [--log FILE] [--on-done CMD] -- CMD...\n"
               "       bench_run_until_committed --end-offsets --bootstrap B --topic OUT --target N "
               "[same options] -- CMD...\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") { ++i; break; }
    if (a == "--end-offsets") { o.end_offsets = true; continue; }
    if (i + 1 >= argc) usage(("missing value for " + std::string(a)).c_str());
    const char* v = argv[++i];
    if (a == "--bootstrap") o.bootstrap = v;
    else if (a == "--group") o.group = v;
    else if (a == "--topic") o.topic = v;
    else if (a == "--target") o.target = std::atoll(v);
    else if (a == "--broker-pid") o.broker_pid = std::atoi(v);
    else if (a == "--interval-ms") o.interval_ms = std::atoi(v);
    else if (a == "--timeout-s") o.timeout_s = std::atoi(v);
    else if (a == "--stop-timeout-s") o.stop_timeout_s = std::atoi(v);
    else if (a == "--log") o.log = v;
    else if (a == "--on-done") o.on_done = v;
    else usage(("unknown option " + std::string(a)).c_str());
  }
  for (; i < argc; ++i) o.command.push_back(argv[i]);
  o.command.push_back(nullptr);
  if (o.bootstrap.empty() || (o.group.empty() && !o.end_offsets) || o.topic.empty() ||
      o.target <= 0 || o.command.size() < 2)
    usage("--bootstrap, --group (unless --end-offsets), --topic, a positive --target and a "
          "command are required");
  return o;
}

void set(rd_kafka_conf_t* c, const char* k, const std::string& v) {
  char err[512];
  if (rd_kafka_conf_set(c, k, v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
    std::fprintf(stderr, "bench_run_until_committed: %s: %s\n", k, err);
    std::exit(2);
  }
}

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Waits for the child to exit; SIGKILL after the timeout. Returns the exit status text.
std::string stop_child(pid_t pid, int timeout_s, double& stop_s) {
  const auto t0 = Clock::now();
  ::kill(pid, SIGTERM);
  int status = 0;
  bool killed = false;
  while (true) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (!killed && since(t0) > timeout_s) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop_s = since(t0);
  if (WIFEXITED(status)) return (killed ? "killed:" : "") + std::to_string(WEXITSTATUS(status));
  return "signal:" + std::to_string(WTERMSIG(status));
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);

  rd_kafka_conf_t* c = rd_kafka_conf_new();
  set(c, "bootstrap.servers", o.bootstrap);
  if (!o.group.empty()) set(c, "group.id", o.group);
  set(c, "isolation.level", "read_committed");
  set(c, "enable.auto.commit", "false");
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof err);
  if (rk == nullptr) {
    std::fprintf(stderr, "bench_run_until_committed: %s\n", err);
    return 2;
  }
  const int parts = partition_count(rk, o.topic);
  if (parts <= 0) {
    std::fprintf(stderr, "bench_run_until_committed: no metadata for topic %s\n", o.topic.c_str());
    return 2;
  }
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(parts);
  for (int p = 0; p < parts; ++p) rd_kafka_topic_partition_list_add(list, o.topic.c_str(), p);

  const double broker_cpu0 = o.broker_pid > 0 ? cpu_seconds(o.broker_pid) : -1;
  const auto t0 = Clock::now();
  pid_t child = ::fork();
  if (child < 0) {
    std::perror("fork");
    return 2;
  }
  if (child == 0) {
    if (!o.log.empty()) {
      int fd = ::open(o.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        ::close(fd);
      }
    }
    ::execvp(o.command[0], o.command.data());
    std::perror("exec");
    ::_exit(127);
  }

  double first_commit_s = -1, end_s = -1;
  int64_t first_total = 0, total = 0;
  std::string failure;
  while (true) {
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) {
      failure = "the command exited before the input was committed (status " +
                std::to_string(status) + ")";
      child = -1;
      break;
    }
    if (since(t0) > o.timeout_s) {
      failure = "timeout: committed " + std::to_string(total) + " of " + std::to_string(o.target);
      break;
    }
    bool got = false;
    if (o.end_offsets) {
      got = true;
      for (int p = 0; p < parts; ++p) {
        int64_t lo = 0, hi = 0;
        if (rd_kafka_query_watermark_offsets(rk, o.topic.c_str(), p, &lo, &hi, 5000) ==
            RD_KAFKA_RESP_ERR_NO_ERROR) {
          list->elems[p].offset = hi;
          list->elems[p].err = RD_KAFKA_RESP_ERR_NO_ERROR;
        } else {
          got = false;
        }
      }
    } else {
      for (int p = 0; p < parts; ++p) list->elems[p].offset = RD_KAFKA_OFFSET_INVALID;
      got = rd_kafka_committed(rk, list, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR;
    }
    if (got) {
      int64_t sum = 0;
      for (int p = 0; p < parts; ++p)
        if (list->elems[p].err == RD_KAFKA_RESP_ERR_NO_ERROR && list->elems[p].offset > 0)
          sum += list->elems[p].offset;
      total = sum;
      if (total > 0 && first_commit_s < 0) {
        first_commit_s = since(t0);
        first_total = total;
      }
      if (total >= o.target) {
        end_s = since(t0);
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
  }

  double cpu = -1, broker_cpu = -1, stop_s = 0;
  long rss = -1;
  std::string exit_status = "n/a", threads = "{}";
  if (child > 0) {
    cpu = cpu_seconds(child);
    threads = threads_json(child, 8);
    rss = peak_rss_kb(child);
    if (o.broker_pid > 0 && broker_cpu0 >= 0) broker_cpu = cpu_seconds(o.broker_pid) - broker_cpu0;
    if (!o.on_done.empty() && std::system(o.on_done.c_str()) != 0)
      std::fprintf(stderr, "bench_run_until_committed: --on-done command failed\n");
    exit_status = stop_child(child, o.stop_timeout_s, stop_s);
  }
  const double steady =
      end_s > first_commit_s && first_commit_s >= 0
          ? static_cast<double>(o.target - first_total) / (end_s - first_commit_s)
          : 0;
  std::printf(
      "{\"target\":%lld,\"committed\":%lld,\"seconds\":%.3f,\"first_commit_s\":%.3f,"
      "\"records_per_s\":%.0f,\"steady_records_per_s\":%.0f,\"cpu_s\":%.2f,\"peak_rss_kb\":%ld,"
      "\"broker_cpu_s\":%.2f,\"stop_s\":%.2f,\"exit\":\"%s\",\"error\":\"%s\",\"threads\":%s}\n",
      static_cast<long long>(o.target), static_cast<long long>(total), end_s, first_commit_s,
      end_s > 0 ? static_cast<double>(o.target) / end_s : 0.0, steady, cpu, rss, broker_cpu,
      stop_s, exit_status.c_str(), failure.c_str(), threads.c_str());
  rd_kafka_topic_partition_list_destroy(list);
  rd_kafka_destroy(rk);
  return failure.empty() ? 0 : 1;
}
