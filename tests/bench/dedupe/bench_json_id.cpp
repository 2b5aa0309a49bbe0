// bench_json_id: not a test. The dedupe stage's id.json lookup on records shaped as
// tests/tools/kafka-tool.sh produce writes them ({"messageId":"<uuid>","seq":N,
// "payload":"..."}, --size bytes), with its fast path (json_id_scan.hpp) and with simdjson
// alone, alternating in one run: nanoseconds per record for each and their ratio.
//   build-bench/bench_json_id [--size 150] [--records 1024] [--rounds 4] [--passes 2000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "id_extractor.hpp"

using exactly::dedupe::IdExtractor;
using exactly::dedupe::IdSource;
using exactly::dedupe::IdSpec;

namespace {

double ns_per_record(IdExtractor& x, const std::vector<std::string>& docs, int passes, size_t& kept) {
  std::string out, reason;
  const auto t0 = std::chrono::steady_clock::now();
  for (int pass = 0; pass < passes; ++pass)
    for (const auto& d : docs) {
      ex_record r{};
      r.value = {reinterpret_cast<const uint8_t*>(d.data()), d.size()};
      r.timestamp_ms = -1;
      out.clear();
      kept += x.extract(r, out, reason);
    }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s * 1e9 / (static_cast<double>(passes) * static_cast<double>(docs.size()));
}

}  // namespace

int main(int argc, char** argv) {
  size_t size = 150, records = 1024;
  int rounds = 4, passes = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--size")) size = std::strtoul(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--records")) records = std::strtoul(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--passes")) passes = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "bench_json_id: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  static const char kFill[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::vector<std::string> docs;
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < records; ++i) {
    char uuid[40];
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t g = h * 0xD6E8FEB86659FD93ull;
    std::snprintf(uuid, sizeof uuid, "%08x-%04x-4%03x-8%03x-%012llx", static_cast<unsigned>(h >> 32),
                  static_cast<unsigned>(h >> 16) & 0xffff, static_cast<unsigned>(h) & 0xfff,
                  static_cast<unsigned>(g >> 52), static_cast<unsigned long long>(g & 0xffffffffffffull));
    std::string d = std::string("{\"messageId\":\"") + uuid + "\",\"seq\":" + std::to_string(i) + ",\"payload\":\"";
    while (d.size() + 2 < size) d += kFill[(d.size() * 31 + i) % (sizeof kFill - 1)];
    d += "\"}";
    docs.push_back(std::move(d));
  }
  IdExtractor fast(IdSpec{IdSource::json, "", "/messageId", 128, true});
  IdExtractor simdjson_only(IdSpec{IdSource::json, "", "/messageId", 128, false});
  size_t kept = 0;
  std::vector<double> a, b;
  for (int r = 0; r < rounds; ++r) {
    a.push_back(ns_per_record(fast, docs, passes, kept));
    b.push_back(ns_per_record(simdjson_only, docs, passes, kept));
    std::printf("round %d: fast path %.1f ns/record, simdjson alone %.1f ns/record\n", r + 1, a.back(), b.back());
  }
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const double ma = a[a.size() / 2], mb = b[b.size() / 2];
  std::printf("{\"size\":%zu,\"fast_ns\":%.1f,\"simdjson_ns\":%.1f,\"ratio\":%.2f,\"kept\":%zu}\n", size, ma,
              mb, mb / ma, kept);
  return kept == 2 * static_cast<size_t>(rounds) * static_cast<size_t>(passes) * records ? 0 : 1;
}
