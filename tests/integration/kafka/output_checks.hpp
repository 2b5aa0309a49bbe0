#pragma once
// What the multi-host tests check on the output topic once the hosts are done, with an
// independent reader (tests/tools, Java): no transaction left pinning it, markers visible.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "hosts.hpp"
#include "kafka_env.hpp"
#include "test_util.hpp"

namespace exactly::test {

// True when, in an `end-offsets` answer, every partition's "lso" equals its "end".
inline bool all_stable(const std::string& json) {
  size_t p = 0;
  int partitions = 0;
  while ((p = json.find("\"end\":", p)) != std::string::npos) {
    size_t q = json.find("\"lso\":", p);
    if (q == std::string::npos) return false;
    if (std::stoll(json.substr(p + 6)) != std::stoll(json.substr(q + 6))) return false;
    ++partitions;
    p = q;
  }
  return partitions > 0;
}

// The number after "key" in the reader's answer, or -1 (reported) when it has none.
inline long long answer(const RunResult& v, const std::string& key) {
  if (v.out.find("\"" + key + "\":") == std::string::npos) {
    ADD_FAILURE() << "the reader gave no " << key << ": " << v.out << v.err;
    return -1;
  }
  return json_number(v.out, key);
}

// Waits (bounded) until every output partition's last stable offset equals its end
// offset. A host that left by SIGKILL never comes back to fence its transactional.id, so
// its open transaction pins the output's last stable offset until the broker aborts it
// (the sink's transaction.timeout, 10 s by default); a read_committed reader started before that
// would not see what the other hosts committed behind it.
inline void wait_output_settled(const std::string& out) {
  const auto t0 = Clock::now();
  std::string last;
  while (seconds_since(t0) < 150) {
    auto r = kafka_tool("end-offsets --topic " + out, false);
    last = r.out + r.err;
    if (r.exit_code == 0 && all_stable(r.out)) {
      std::printf("output settled (last stable offset = end on every partition) after %.1f s\n",
                  seconds_since(t0));
      return;
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  ADD_FAILURE() << "an open transaction still pins the output after 150 s: " << last;
}

// Nothing left hanging: fresh markers on every output partition become visible. (After
// the reader: the markers are records of the output topic.)
inline void expect_markers_visible(const std::string& out) {
  auto m = kafka_tool("marker-check --topic " + out + " --timeout-s 20", false);
  std::printf("marker-check: %s", m.out.c_str());
  EXPECT_EQ(m.exit_code, 0) << m.out << m.err;
}

// The independent reader's verdict on a dedupe pipeline's output: every distinct input
// id exactly once, with its first payload, nothing else. Returns the answer for more checks.
// Records of `topic` a read_committed reader sees.
inline long long count_committed(const std::string& topic) {
  return std::atoll(kafka_tool("count --topic " + topic + " --read-committed").out.c_str());
}

inline RunResult expect_dedupe_exactly_once(const std::string& in, const std::string& out,
                                            long long records) {
  auto v = kafka_tool("verify --input-topic " + in + " --output-topic " + out +
                          " --mode dedupe --expect-input " + std::to_string(records),
                      false);
  std::printf("independent reader: %s%s", v.out.c_str(), tail_of(v.err, 3000).c_str());
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_EQ(answer(v, "missing"), 0);
  EXPECT_EQ(answer(v, "duplicated"), 0);
  EXPECT_EQ(answer(v, "wrong_payload"), 0);
  EXPECT_EQ(answer(v, "extra"), 0);
  return v;
}

}  // namespace exactly::test
