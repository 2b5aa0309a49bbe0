#pragma once
// Shared by the http sink's plugin tests: the .so, a server per test, records built from
// small JSON values, and window counts over the server's arrival times.
#include <gtest/gtest.h>

#include <exactly/testing/harness.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "http_test_server.hpp"

namespace http_test {

using exactly::testing::Library;
using exactly::testing::OwnedRecord;
using exactly::testing::Pairs;
using exactly::testing::SinkHarness;
using exactly::test::HttpTestServer;
using exactly::test::SeenRequest;

inline Library& lib() {
  static Library l(std::string(EXACTLY_PLUGIN_DIR) + "/exactly_http.so");
  return l;
}

// A record whose value drives the server through the URL template below:
// {"mode":..,"a1":..,"a2":..,"cls":..,"id":..}
inline OwnedRecord job(const std::string& mode, const std::string& a1, const std::string& a2,
                       const std::string& cls, const std::string& id, int64_t offset = 0) {
  OwnedRecord r;
  r.value = R"({"mode":")" + mode + R"(","a1":")" + a1 + R"(","a2":")" + a2 + R"(","cls":")" +
            cls + R"(","id":")" + id + R"("})";
  r.offset = offset;
  return r;
}
inline OwnedRecord ok_job(const std::string& cls, const std::string& id) {
  return job("ok", "x", "x", cls, id);
}

// Config for the job records: /<mode>/<a1>/<a2>/<cls>-<id>, idempotency key /id, class /cls.
inline Pairs job_config(const HttpTestServer& srv, Pairs extra = {}) {
  Pairs p = {{"url", srv.base() + "/{/mode}/{/a1}/{/a2}/{/cls}-{/id}"},
             {"idempotency.key", "/id"},
             {"class.field", "/cls"},
             {"retry.backoff.initial", "10"},
             {"retry.backoff.max", "50"}};
  for (auto& kv : extra) p.push_back(kv);
  return p;
}

inline std::vector<SeenRequest> with_prefix(const std::vector<SeenRequest>& all,
                                            const std::string& prefix) {
  std::vector<SeenRequest> out;
  for (auto& r : all)
    if (r.path.rfind(prefix, 0) == 0) out.push_back(r);
  return out;
}

// The most arrivals in any window of `seconds` (windows start at an arrival).
inline size_t max_in_window(std::vector<SeenRequest> rs, double seconds) {
  std::vector<double> t;
  for (auto& r : rs) t.push_back(r.t);
  std::sort(t.begin(), t.end());
  size_t best = 0;
  for (size_t i = 0, j = 0; i < t.size(); ++i) {
    while (j < t.size() && t[j] < t[i] + seconds) ++j;
    best = std::max(best, j - i);
  }
  return best;
}

}  // namespace http_test
