#pragma once
// Several `exactly run` processes in one consumer group, each with its own config file
// (own state directories), its own log and a life the test controls: start, SIGKILL,
// restart on the same state, leave for good, join later.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kafka_env.hpp"
#include "test_util.hpp"

namespace exactly::test {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Polls `cond` every `every` until it holds or `limit` has passed; its last answer.
inline bool wait_for(const std::function<bool()>& cond, std::chrono::seconds limit,
                     std::chrono::milliseconds every = std::chrono::milliseconds(200)) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(every);
  }
  return cond();
}

inline std::string tail_of(const std::string& s, size_t n) {
  return s.size() > n ? "..." + s.substr(s.size() - n) : s;
}

// An input and an output topic of 4 partitions each.
inline void create_in_out_topics(const std::string& in, const std::string& out) {
  kafka_tool("create-topic --topic " + in + " --partitions 4");
  kafka_tool("create-topic --topic " + out + " --partitions 4");
}

// Input arriving while the test runs: `records` keyed 150-byte JSON records with UUID ids
// over 4 partitions at `rate` per second, a `dup_ratio` of them repeats (another payload).
// With `stop_file`, the input ends early once that file exists (`records` is then a bound):
// for a test whose faults take as long as they take.
inline std::unique_ptr<Child> produce_while_running(const std::string& topic, long long records,
                                                    long long rate, const std::string& dup_ratio,
                                                    int seed, const fs::path& log,
                                                    const fs::path& stop_file = {}) {
  std::vector<std::string> argv{tools_dir() + "/kafka-tool.sh", "produce", "--topic", topic,
                                "--count", std::to_string(records), "--partitions", "4", "--keyed",
                                "--dup-ratio", dup_ratio, "--dup-variant", "--size", "150", "--seed",
                                std::to_string(seed), "--rate", std::to_string(rate), "--bootstrap",
                                kafka_bootstrap()};
  if (!stop_file.empty()) argv.insert(argv.end(), {"--stop-file", stop_file.string()});
  return std::make_unique<Child>(argv, log);
}

// An exactly_once kafka -> dedupe (with its changelog topic) -> kafka host of pipeline
// `name`, its state under `state`; `source_extra` and `dedupe_extra` are more lines of
// the source's and the dedupe stage's config (indented as theirs: 8 and 10 spaces).
inline std::string dedupe_host_yaml(const std::string& name, const std::string& in, const std::string& out,
                                    const std::string& group, const fs::path& state,
                                    const std::string& source_extra = "",
                                    const std::string& dedupe_extra = "") {
  const std::string b = kafka_bootstrap();
  return "pipelines:\n"
         "  - name: " + name + "\n"
         "    delivery: exactly_once\n"
         "    commit: { interval: 300ms }\n"
         "    restart: { backoff.initial: 200ms, backoff.max: 2s }\n"
         "    source:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: \"" + b + "\"\n        group.id: " + group + "\n"
         "        topics: [" + in + "]\n" + source_extra +
         "    transforms:\n      - plugin: dedupe\n        config:\n"
         "          id.json: /messageId\n"
         "          changelog.topic: " + in + "-changelog\n" + dedupe_extra +
         "          state.dir: " + (state / "dedupe").string() + "\n"
         "    sink:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: \"" + b + "\"\n        topic: " + out + "\n"
         "        partitioning: input\n        state.dir: " + (state / "sink").string() + "\n";
}

// Sum of the group's committed offsets on `topic` (-1 when the tool fails).
inline long long committed_total(const std::string& group, const std::string& topic) {
  auto r = kafka_tool("consume-group-offsets --group " + group + " --topic " + topic, false);
  if (r.exit_code != 0) return -1;
  return json_number(r.out, "total");
}

// Ends input made by produce_while_running with `stop_file` (after the last fault: it
// must still be arriving then) and returns how many records it wrote: an idempotent
// producer's acked records are the input's end offsets, each once.
inline long long end_input(Child& producer, const fs::path& stop_file, const fs::path& producer_log,
                           const std::string& topic) {
  write_file(stop_file, "");
  EXPECT_EQ(producer.wait(), 0) << tail_of(read_file(producer_log), 3000);
  const long long records = json_number(kafka_tool("end-offsets --topic " + topic).out, "total_end");
  std::printf("input: %lld records\n", records);
  return records;
}

// Waits until the group's committed offsets on `topic` cover `records` (each look is a
// JVM start: every 500 ms at most).
inline bool wait_committed(const std::string& group, const std::string& topic, long long records,
                           std::chrono::seconds limit) {
  return wait_for([&] { return committed_total(group, topic) >= records; }, limit,
                  std::chrono::milliseconds(500));
}

// One host process: `exactly run --no-watch <yaml>`, output appended to `log` across
// restarts, with a "---- test: ..." line before each thing the test does to it.
class Host {
 public:
  Host(std::string name, fs::path yaml, fs::path log)
      : name_(std::move(name)), yaml_(std::move(yaml)), log_(std::move(log)) {}

  const std::string& name() const { return name_; }
  bool running() const { return child_ != nullptr; }
  pid_t pid() const { return child_ ? child_->pid() : -1; }
  int starts() const { return starts_; }
  const fs::path& log() const { return log_; }

  void start() {
    note("start #" + std::to_string(starts_ + 1));
    child_ = std::make_unique<Child>(
        std::vector<std::string>{exactly_bin(), "run", "--no-watch", yaml_.string()}, log_);
    ++starts_;
  }

  void signal(int sig) {
    if (!child_) return;
    note(std::string("signal ") + strsignal(sig));
    child_->kill(sig);
  }

  // Waits for the process to end (SIGKILL after `grace`); exit code, or -signal.
  int reap(std::chrono::milliseconds grace = std::chrono::seconds(60)) {
    if (!child_) return 0;
    int code = 0;
    auto deadline = Clock::now() + grace;
    while (!child_->exited(&code)) {
      if (Clock::now() > deadline) {
        note("did not exit within the grace period: SIGKILL");
        child_->kill(SIGKILL);
        code = child_->wait();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    child_.reset();
    return code;
  }

  int stop(int sig, std::chrono::milliseconds grace = std::chrono::seconds(60)) {
    signal(sig);
    return reap(grace);
  }

  // True, with its exit code, when the process ended although nobody told it to.
  bool exited_by_itself(int* code) {
    if (!child_ || !child_->exited(code)) return false;
    child_.reset();
    note("exited by itself with " + std::to_string(*code));
    return true;
  }

  std::string log_tail(size_t n = 4000) const { return tail_of(read_file(log_), n); }

  // Waits (up to `limit`) until the process started last has logged that its pipelines
  // started: from then on SIGHUP reloads it. Before it blocks the signal (in the first
  // moments of the process) SIGHUP's default action would end it.
  bool wait_started(std::chrono::seconds limit) const {
    const std::string mark = "---- test: " + name_ + ": start #" + std::to_string(starts_) + " ----";
    return wait_for(
        [&] {
          const std::string log = read_file(log_);
          const size_t at = log.rfind(mark);
          return at != std::string::npos && log.find("] started ", at) != std::string::npos;
        },
        limit, std::chrono::milliseconds(100));
  }

 private:
  void note(const std::string& what) {
    std::ofstream f(log_, std::ios::app);
    f << "---- test: " << name_ << ": " << what << " ----\n";
  }

  std::string name_;
  fs::path yaml_, log_;
  std::unique_ptr<Child> child_;
  int starts_ = 0;
};

// SIGKILLs `host` while `producer` still writes (a kill must meet work in flight), starts
// it again on the same state, and waits until the input's `records` are all committed
// and the host has stopped cleanly.
inline void kill_in_flight_and_finish(Host& host, Child& producer, const fs::path& producer_log,
                                      const std::string& group, const std::string& in, long long records) {
  int code = -1;
  EXPECT_FALSE(producer.exited(&code)) << "the input was complete before the kill; slow it down";
  host.stop(SIGKILL);
  host.start();
  EXPECT_EQ(producer.wait(), 0) << read_file(producer_log);
  EXPECT_TRUE(wait_committed(group, in, records, std::chrono::seconds(120)))
      << "committed " << committed_total(group, in) << " of " << records << "\n" << host.log_tail();
  EXPECT_EQ(host.stop(SIGTERM), 0) << host.log_tail();
}

// How often `needle` appears in the logs of all `hosts` together.
inline int count_in_logs(const std::vector<std::unique_ptr<Host>>& hosts, const std::string& needle) {
  int n = 0;
  for (const auto& h : hosts) n += count_of(read_file(h->log()), needle);
  return n;
}

inline std::string log_tails(const std::vector<std::unique_ptr<Host>>& hosts, size_t n = 4000) {
  std::string s;
  for (auto& h : hosts) s += "\n===== " + h->name() + " log tail (" + h->log().string() + "):\n" + h->log_tail(n);
  return s;
}

}  // namespace exactly::test
