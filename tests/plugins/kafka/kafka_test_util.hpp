// Helpers for the kafka plugin tests: librdkafka used directly (independently of the
// plugin) to seed input topics and to read output back, plus a few harness shortcuts.
#pragma once

#include <exactly/testing/harness.hpp>
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sys/wait.h>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace kt {

using exactly::testing::OwnedRecord;
using exactly::testing::Pairs;

inline std::string plugin_path() { return std::string(EXACTLY_PLUGIN_DIR) + "/exactly_kafka.so"; }

inline int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline std::string unique(const std::string& prefix) {
  static int n = 0;
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(++n) + "-" +
         std::to_string(now_ms() % 100000);
}

inline rd_kafka_conf_t* conf(const std::string& bootstrap,
                             const std::vector<std::pair<std::string, std::string>>& kv = {}) {
  rd_kafka_conf_t* c = rd_kafka_conf_new();
  char err[512];
  auto set = [&](const std::string& k, const std::string& v) {
    if (rd_kafka_conf_set(c, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK)
      throw std::runtime_error(k + ": " + err);
  };
  set("bootstrap.servers", bootstrap);
  for (auto& [k, v] : kv) set(k, v);
  return c;
}

struct Msg {
  int32_t partition = 0;
  int64_t offset = 0;
  std::optional<std::string> key;
  std::string value;
  int64_t timestamp = -1;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Produces records (key i, value prefix+i) with a plain idempotent producer and waits
// for every delivery.
inline void produce(const std::string& bootstrap, const std::string& topic, int from, int to,
                    const std::string& prefix = "v", int32_t partition = RD_KAFKA_PARTITION_UA) {
  char err[512];
  rd_kafka_conf_t* c = conf(bootstrap, {{"enable.idempotence", "true"}, {"linger.ms", "5"}});
  rd_kafka_t* p = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
  if (!p) throw std::runtime_error(err);
  for (int i = from; i < to; ++i) {
    std::string k = "k" + std::to_string(i), v = prefix + std::to_string(i);
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(
          p, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_KEY(k.data(), k.size()), RD_KAFKA_V_VALUE(v.data(), v.size()),
          RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(p, 10);
        continue;
      }
      if (e) throw std::runtime_error(std::string("produce: ") + rd_kafka_err2str(e));
      break;
    }
  }
  while (rd_kafka_outq_len(p) > 0) rd_kafka_flush(p, 1000);
  rd_kafka_destroy(p);
}

// One record to produce with produce_records().
struct Out {
  int32_t partition = RD_KAFKA_PARTITION_UA;
  std::string key, value;
  std::vector<std::pair<std::string, std::string>> headers;
  bool null_value = false;  // a tombstone: no value at all, not an empty one
};

// Produces `records` in order (idempotent producer) and waits for every delivery.
// `extra`: more producer settings (e.g. compression.codec).
inline void produce_records(const std::string& bootstrap, const std::string& topic,
                            const std::vector<Out>& records,
                            const std::vector<std::pair<std::string, std::string>>& extra = {}) {
  char err[512];
  std::vector<std::pair<std::string, std::string>> kv = {{"enable.idempotence", "true"}, {"linger.ms", "5"}};
  kv.insert(kv.end(), extra.begin(), extra.end());
  rd_kafka_conf_t* c = conf(bootstrap, kv);
  rd_kafka_t* p = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
  if (!p) throw std::runtime_error(err);
  for (const auto& r : records) {
    for (;;) {
      rd_kafka_headers_t* h = rd_kafka_headers_new(r.headers.size());
      for (const auto& [k, v] : r.headers) rd_kafka_header_add(h, k.c_str(), -1, v.data(), v.size());
      void* key = const_cast<char*>(r.key.data());
      void* value = r.null_value ? nullptr : const_cast<char*>(r.value.data());
      size_t key_len = r.key.size(), value_len = r.value.size();
      rd_kafka_resp_err_t e = rd_kafka_producev(
          p, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(r.partition),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, key_len),
          RD_KAFKA_V_VALUE(value, value_len), RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      rd_kafka_headers_destroy(h);
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(p, 10);
        continue;
      }
      throw std::runtime_error(std::string("produce: ") + rd_kafka_err2str(e));
    }
  }
  while (rd_kafka_outq_len(p) > 0) rd_kafka_flush(p, 1000);
  rd_kafka_destroy(p);
}

// The value of the last header `name` of `m`, or "".
inline std::string header_of(const Msg& m, const std::string& name) {
  std::string v;
  for (const auto& [k, x] : m.headers)
    if (k == name) v = x;
  return v;
}

// Reads a whole topic from the beginning (all partitions) until every partition is at
// its end and at least `at_least` records were seen, or the deadline passes.
inline std::vector<Msg> read_topic(const std::string& bootstrap, const std::string& topic,
                                   bool read_committed, size_t at_least,
                                   int64_t deadline_ms = 60000) {
  char err[512];
  rd_kafka_conf_t* c =
      conf(bootstrap, {{"group.id", unique("reader")},
                       {"enable.partition.eof", "true"},
                       {"enable.auto.commit", "false"},
                       {"isolation.level", read_committed ? "read_committed" : "read_uncommitted"}});
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof(err));
  if (!rk) throw std::runtime_error(err);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  int parts = 0;
  const int64_t end = now_ms() + deadline_ms;
  while (now_ms() < end) {
    if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (md->topic_cnt == 1 && md->topics[0].err == 0) parts = md->topics[0].partition_cnt;
      rd_kafka_metadata_destroy(md);
      if (parts > 0) break;
    }
  }
  rd_kafka_topic_destroy(rkt);
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(parts);
  for (int i = 0; i < parts; ++i)
    rd_kafka_topic_partition_list_add(l, topic.c_str(), i)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  std::vector<Msg> out;
  std::set<int32_t> at_eof;
  while (now_ms() < end) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 200);
    if (!m) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      at_eof.insert(m->partition);
    } else if (m->err == 0) {
      at_eof.erase(m->partition);
      Msg x;
      x.partition = m->partition;
      x.offset = m->offset;
      if (m->key) x.key = std::string(static_cast<const char*>(m->key), m->key_len);
      if (m->payload) x.value = std::string(static_cast<const char*>(m->payload), m->len);
      x.timestamp = rd_kafka_message_timestamp(m, nullptr);
      rd_kafka_headers_t* h = nullptr;
      if (rd_kafka_message_headers(m, &h) == 0) {
        const char* n;
        const void* v;
        size_t sz;
        for (size_t i = 0; rd_kafka_header_get_all(h, i, &n, &v, &sz) == 0; ++i)
          x.headers.emplace_back(n, v ? std::string(static_cast<const char*>(v), sz) : "");
      }
      out.push_back(std::move(x));
    }
    rd_kafka_message_destroy(m);
    if (static_cast<int>(at_eof.size()) == parts && out.size() >= at_least) break;
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

// Committed offsets of `group` for partitions 0..parts-1 of `topic` (-1001 = none).
inline std::map<int32_t, int64_t> committed(const std::string& bootstrap, const std::string& group,
                                            const std::string& topic, int parts) {
  char err[512];
  rd_kafka_conf_t* c = conf(bootstrap, {{"group.id", group}, {"enable.auto.commit", "false"}});
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof(err));
  if (!rk) throw std::runtime_error(err);
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(parts);
  for (int i = 0; i < parts; ++i) rd_kafka_topic_partition_list_add(l, topic.c_str(), i);
  rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__TIMED_OUT;
  for (int attempt = 0; attempt < 10 && e; ++attempt) e = rd_kafka_committed(rk, l, 10000);
  std::map<int32_t, int64_t> out;
  for (int i = 0; i < l->cnt; ++i) out[l->elems[i].partition] = l->elems[i].offset;
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_destroy(rk);
  if (e) throw std::runtime_error(std::string("committed: ") + rd_kafka_err2str(e));
  return out;
}

// Records with and without headers, with plain, empty and no values (tombstones), one
// of them whose value ends in a 0x00 byte: what the source must hand out as written
// (it skips librdkafka's header parse on the byte after the value, message_headers.hpp).
inline std::vector<Out> header_mix(int n, const std::string& tag) {
  std::vector<Out> out;
  for (int i = 0; i < n; ++i) {
    Out r;
    r.partition = 0;
    r.key = "k" + std::to_string(i);
    r.value = tag + std::to_string(i);
    switch (i % 7) {
      case 0: break;
      case 1: r.headers = {{"a", "x" + std::to_string(i)}}; break;
      case 2: r.value.clear(); break;
      case 3: r.value.clear(); r.headers = {{"h", ""}, {"k", "v"}}; break;
      case 4: r.null_value = true; break;
      case 5: r.null_value = true; r.headers = {{"t", std::to_string(i)}}; break;
      case 6: r.value.push_back('\0'); r.headers = {{"z", std::string(1, '\0')}}; break;
    }
    out.push_back(std::move(r));
  }
  return out;
}

// Fails the test where `got` (one partition, in order) differs from what was written.
inline void expect_as_written(const std::vector<Out>& written, const std::vector<OwnedRecord>& got) {
  ASSERT_EQ(got.size(), written.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].key, std::optional<std::string>(written[i].key)) << "record " << i;
    EXPECT_EQ(got[i].value, written[i].null_value ? std::string() : written[i].value) << "record " << i;
    EXPECT_EQ(got[i].headers, written[i].headers) << "record " << i;
  }
}

// Reads `n` records with polls of at most 200 ms, `pause_ms` apart (a consumer slower
// than its fetcher, so the prefetch queue fills); `empty` counts the polls that came back
// with nothing before the last record arrived. A source whose fetcher stopped at a full
// queue and was not woken when it drained shows about one such poll per 200 ms stopped.
inline std::vector<OwnedRecord> poll_counting_empty(exactly::testing::SourceHarness& src, size_t n,
                                                    size_t& empty, int pause_ms,
                                                    int64_t deadline_ms = 120000) {
  std::vector<OwnedRecord> out;
  empty = 0;
  const int64_t end = now_ms() + deadline_ms;
  while (out.size() < n && now_ms() < end) {
    exactly::sdk::Status st;
    auto got = src.poll(200, nullptr, &st);
    if (!st.is_ok()) throw std::runtime_error("poll failed: " + st.message());
    if (got.empty() && !out.empty()) ++empty;  // joining the group is not a stop
    for (auto& r : got) out.push_back(std::move(r));
    if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  }
  return out;
}

// Polls until `n` records arrived or `deadline_ms` passed.
inline std::vector<OwnedRecord> poll_n(exactly::testing::SourceHarness& src, size_t n,
                                       int64_t deadline_ms = 60000) {
  size_t empty = 0;
  return poll_counting_empty(src, n, empty, 0, deadline_ms);
}

// librdkafka 2.0.2 stops fetching a partition once the prefetch queue is full and looks
// again only when its broker thread wakes for another reason, up to a second later: the
// source wakes it when the queue has room again (plugins/kafka/fetch_waker.hpp). A
// consumer slower than its fetcher reads `n` records of a new one-partition topic
// `in` through a queue of 200, filling and draining it n/200 times; stopped each time,
// the source came back empty from two or three 200 ms polls per cycle (70 for n = 3000).
inline void expect_backlog_keeps_being_fetched(const exactly::testing::Library& lib,
                                               const std::string& servers, const std::string& in,
                                               int n) {
  std::vector<Out> backlog;
  for (int i = 0; i < n; ++i) {
    Out r;
    r.partition = 0;
    r.key = "k" + std::to_string(i);
    r.value = "b" + std::to_string(i);
    backlog.push_back(std::move(r));
  }
  produce_records(servers, in, backlog, {{"batch.num.messages", "50"}});  // 50-100 per fetch below
  Pairs cfg = {{"bootstrap.servers", servers},
               {"group.id", unique("wake-g")},
               {"topics", in},
               {"batch.size", "100"},
               {"rdkafka.queued.min.messages", "200"},
               {"rdkafka.max.partition.fetch.bytes", "4096"},
               {"rdkafka.fetch.min.bytes", "1"}};
  exactly::testing::FakeHost host;
  exactly::testing::SourceHarness src(lib, "kafka", cfg, &host);
  ASSERT_TRUE(src.ok()) << src.create_status().message();
  ASSERT_TRUE(src.open().is_ok());
  size_t empty = 0;
  auto got = poll_counting_empty(src, static_cast<size_t>(n), empty, 20);
  ASSERT_EQ(got.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i].value, "b" + std::to_string(i)) << i;
  EXPECT_LE(empty, 5u) << "polls that found the queue empty while the backlog waited";
  EXPECT_GT(host.metrics["kafka_source_fetch_wakeups_total"], 0.0);
}

// The source's side of holds with a backlog: `src`'s two partitions (`n` records each
// already in them), numbered 0 and 1, held back from their assignment (a stage restoring
// them) and released one after the other while the first already flows (the second's
// release may re-assign both when its fetcher has not started). Every record of both
// must come out once, in order, and none of a partition while it is held.
inline void expect_held_partitions_released_in_turn(exactly::testing::SourceHarness& src,
                                                    exactly::testing::FakeHost& h, int n) {
  const int64_t join_end = now_ms() + 60000;
  while (h.assigned.size() < 2 && now_ms() < join_end) src.poll(100);  // held: dropped
  ASSERT_EQ(h.assigned.size(), 2u);
  std::map<int32_t, int32_t> number_of;
  for (auto& p : h.assigned) number_of[p.id] = p.number;
  ASSERT_TRUE(src.pause_partitions(h.assigned, true).is_ok());
  std::map<int32_t, std::vector<int64_t>> seen;  // by partition number
  std::set<int32_t> held{0, 1};
  bool from_held = false;
  auto poll_once = [&] {
    for (auto& r : src.poll(100)) {
      if (held.count(number_of[r.partition])) {
        from_held = true;
        continue;
      }
      seen[number_of[r.partition]].push_back(r.offset);
    }
  };
  for (int i = 0; i < 5; ++i) poll_once();
  for (int number : {0, 1}) {
    exactly::sdk::Partition p = h.assigned[0].number == number ? h.assigned[0] : h.assigned[1];
    ASSERT_TRUE(src.pause_partitions({p}, false).is_ok());
    held.erase(number);
    // The first runs through part of its backlog before the second is released.
    const int64_t until = now_ms() + 30000;
    while (number == 0 && seen[0].size() < static_cast<size_t>(n / 3) && now_ms() < until) poll_once();
    if (number == 0) EXPECT_FALSE(from_held) << "partition 1 handed out records while still held";
  }
  const int64_t end = now_ms() + 60000;
  while ((seen[0].size() < static_cast<size_t>(n) || seen[1].size() < static_cast<size_t>(n)) &&
         now_ms() < end)
    poll_once();
  EXPECT_FALSE(from_held) << "a held partition handed out records";
  for (int number : {0, 1}) {
    const auto& v = seen[number];
    EXPECT_EQ(v.size(), static_cast<size_t>(n)) << "partition " << number;
    for (size_t i = 0; i < v.size() && i < static_cast<size_t>(n); ++i)
      if (v[i] != static_cast<int64_t>(i)) {
        ADD_FAILURE() << "partition " << number << ": record " << i << " has offset " << v[i];
        break;
      }
  }
}

// A command's stdout; `rc` gets its exit code (-1 when it did not run or was signalled).
inline std::string shell(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    *rc = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int st = pclose(p);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

// One admin request about one topic on `rk` (issued by `issue` onto a queue), and a check
// that its one result is no error.
template <typename Issue, typename Results>
inline void admin_one_topic(rd_kafka_t* rk, Issue issue, Results results) {
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  issue(q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 30000);
  if (ev != nullptr) {
    size_t cnt = 0;
    const rd_kafka_topic_result_t** tr = results(ev, &cnt);
    EXPECT_EQ(cnt, 1u);
    if (cnt == 1)
      EXPECT_EQ(rd_kafka_topic_result_error(tr[0]), RD_KAFKA_RESP_ERR_NO_ERROR)
          << rd_kafka_topic_result_error_string(tr[0]);
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_queue_destroy(q);
  ASSERT_NE(ev, nullptr) << "no answer to an admin request in 30 s";
}

inline void create_topic(const std::string& bootstrap, const std::string& name, int parts) {
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf(bootstrap), err, sizeof(err));
  ASSERT_NE(rk, nullptr) << err;
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(name.c_str(), parts, 1, err, sizeof(err));
  admin_one_topic(
      rk, [&](rd_kafka_queue_t* q) { rd_kafka_CreateTopics(rk, &nt, 1, nullptr, q); },
      [](rd_kafka_event_t* ev, size_t* n) {
        return rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), n);
      });
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_destroy(rk);
}

// Deletes the records of `topic`'s `partition` before `before` (the log start moves there).
inline void delete_records_before(const std::string& bootstrap, const std::string& topic,
                                  int32_t partition, int64_t before) {
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf(bootstrap), err, sizeof(err));
  ASSERT_NE(rk, nullptr) << err;
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, topic.c_str(), partition)->offset = before;
  rd_kafka_DeleteRecords_t* dr = rd_kafka_DeleteRecords_new(l);
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_DeleteRecords(rk, &dr, 1, nullptr, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 30000);
  EXPECT_NE(ev, nullptr) << "no answer to DeleteRecords in 30 s";
  if (ev != nullptr) {
    EXPECT_EQ(rd_kafka_event_error(ev), RD_KAFKA_RESP_ERR_NO_ERROR) << rd_kafka_event_error_string(ev);
    const rd_kafka_topic_partition_list_t* res =
        rd_kafka_DeleteRecords_result_offsets(rd_kafka_event_DeleteRecords_result(ev));
    EXPECT_TRUE(res != nullptr && res->cnt == 1 && res->elems[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
                res->elems[0].offset == before);
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_DeleteRecords_destroy(dr);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
}

// Deletes a topic and waits (up to 30 s) until the cluster's metadata no longer has it.
inline void delete_topic(const std::string& bootstrap, const std::string& name) {
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf(bootstrap), err, sizeof(err));
  ASSERT_NE(rk, nullptr) << err;
  rd_kafka_DeleteTopic_t* dt = rd_kafka_DeleteTopic_new(name.c_str());
  admin_one_topic(
      rk, [&](rd_kafka_queue_t* q) { rd_kafka_DeleteTopics(rk, &dt, 1, nullptr, q); },
      [](rd_kafka_event_t* ev, size_t* n) {
        return rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), n);
      });
  rd_kafka_DeleteTopic_destroy(dt);
  bool gone = false;
  for (int i = 0; i < 60 && !gone; ++i) {
    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(rk, 1, nullptr, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      gone = true;
      for (int t = 0; t < md->topic_cnt; ++t)
        if (name == md->topics[t].topic) gone = false;
      rd_kafka_metadata_destroy(md);
    }
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_TRUE(gone) << name << " still listed 30 s after its deletion";
  rd_kafka_destroy(rk);
}

// The broker a real-broker suite uses: tests/run.sh's (EXACTLY_KAFKA_BOOTSTRAP) or, when
// run alone, one started for the suite by tests/tools/kafka-broker.sh and stopped after.
struct SuiteBroker {
  std::string dir;        // empty: the shared broker, not ours to stop
  std::string bootstrap;  // empty when it could not start (see error)
  std::string error;

  void start(const std::string& tag) {
    if (const char* b = std::getenv("EXACTLY_KAFKA_BOOTSTRAP"); b != nullptr && *b != '\0') {
      bootstrap = b;
      return;
    }
    dir = (std::filesystem::temp_directory_path() / unique(tag)).string();
    std::filesystem::create_directories(dir);
    int rc = 0;
    std::string out = shell("bash " + script() + " start --dir " + dir + " 2>" + dir + "/start.err", &rc);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    auto nl = out.rfind('\n');
    if (rc == 0) bootstrap = out.substr(nl == std::string::npos ? 0 : nl + 1);
    else error = "kafka-broker.sh start failed (rc " + std::to_string(rc) + "), see " + dir + "/start.err";
  }
  // The command that stops a broker started here ("" for the shared one).
  std::string stop_command() const {
    return dir.empty() ? "" : "bash " + script() + " stop --dir " + dir + " --clean >/dev/null 2>&1";
  }
  void stop() {
    if (dir.empty()) return;
    int rc = 0;
    shell(stop_command(), &rc);
    std::filesystem::remove_all(dir);
  }
  static std::string script() { return std::string(EXACTLY_SOURCE_DIR) + "/tests/tools/kafka-broker.sh"; }
};

}  // namespace kt
