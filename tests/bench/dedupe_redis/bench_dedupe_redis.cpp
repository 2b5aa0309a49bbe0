// The dedupe stage on Redis beside the RocksDB store and beside Redis itself, in one run.
//
//   bench_dedupe_redis --records 1000000 --shards H:P,H:P,H:P --state DIR [--dup 0.006]
//                      [--batch 1024] [--round 100000] [--slices N] [--script-out FILE]
//                      [--tls-shards H:P,... --tls-ca FILE --tls-cli 'redis-cli args']
//
// Drives the real exactly_dedupe.so through its C vtable (as the host does) with JSON
// events whose messageId is a UUID, `--dup` of them repeating an earlier id, a commit
// (prepare_commit + commit) every `--round` records:
//   1. `dedupe` (RocksDB, state under --state);
//   2. `dedupe-redis` on the first shard only; the server's used_memory before and after
//      gives the bytes per claimed id;
//   3. `dedupe-redis` on all the shards;
//   4. with --tls-shards (servers that take only TLS; --tls-ca the CA bundle that signed
//      them, --tls-cli what redis-cli needs to reach them): 2 and 3 again over TLS, and
//      the ratio to the plaintext runs of the same invocation.
// Only the stage's calls are timed. The claim script's text is written to --script-out
// so that run_bench.sh can time redis-benchmark on the same command shape.
#include <exactly/testing/harness.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "redis_claim_script.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using exactly::testing::FakeHost;
using exactly::testing::Library;
using exactly::testing::OwnedConfig;
using exactly::testing::Pairs;

namespace {

struct Args {
  uint64_t records = 1'000'000;
  double dup = 0.006;
  size_t batch = 1024;
  size_t round = 100'000;
  std::vector<std::string> shards;
  std::string state = (fs::temp_directory_path() / "exactly-bench-dedupe-redis").string();
  std::string slices = "1024";
  std::string script_out;
  std::vector<std::string> tls_shards;
  std::string tls_ca, tls_cli;
};

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  for (size_t p = 0; p <= v.size();) {
    size_t q = v.find(',', p);
    if (q == std::string::npos) q = v.size();
    out.push_back(v.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string uuid_of(uint64_t i) {
  static const char* hex = "0123456789abcdef";
  uint64_t a = splitmix(i * 2 + 1), b = splitmix(i * 2 + 2);
  uint8_t bytes[16];
  std::memcpy(bytes, &a, 8);
  std::memcpy(bytes + 8, &b, 8);
  std::string out;
  for (int k = 0; k < 16; ++k) {
    if (k == 4 || k == 6 || k == 8 || k == 10) out.push_back('-');
    out.push_back(hex[bytes[k] >> 4]);
    out.push_back(hex[bytes[k] & 15]);
  }
  return out;
}

// The input, made once: values, and per record its id number (repeats reuse one).
struct Input {
  std::vector<std::string> values;
  uint64_t distinct = 0;
};

Input make_input(const Args& a) {
  Input in;
  in.values.reserve(a.records);
  for (uint64_t i = 0; i < a.records; ++i) {
    uint64_t r = splitmix(i ^ 0xabcdef);
    uint64_t id = in.distinct;
    if (in.distinct > 0 && static_cast<double>(r % 1000000) / 1e6 < a.dup)
      id = splitmix(r) % in.distinct;
    else
      ++in.distinct;
    in.values.push_back("{\"messageId\":\"" + uuid_of(id) + "\",\"body\":\"" +
                        std::string(60, 'x') + "\"}");
  }
  return in;
}

// `extra`: redis-cli's own options (TLS) before the command.
std::string cli(const std::string& addr, const std::string& args, const std::string& extra = "") {
  std::string host = addr.substr(0, addr.rfind(':')), port = addr.substr(addr.rfind(':') + 1);
  std::string cmd = "redis-cli -h " + host + " -p " + port + " " + extra + " " + args;
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (f && fgets(buf, sizeof buf, f)) out += buf;
  if (f) pclose(f);
  return out;
}

long long used_memory(const std::string& addr) {
  std::string info = cli(addr, "info memory");
  size_t p = info.find("used_memory:");
  return p == std::string::npos ? -1 : std::stoll(info.substr(p + 12));
}

struct Result {
  double seconds = 0;
  uint64_t kept = 0;
};

Result run_stage(const Library& lib, const char* name, const Pairs& config, const Input& in,
                 const Args& a) {
  const ex_component& comp = lib.component(EX_KIND_TRANSFORM, name);
  auto* vt = static_cast<const ex_transform_vtable*>(comp.vtable);
  OwnedConfig cfg(comp, config);
  FakeHost host("bench");
  ex_transform_self self = nullptr;
  ex_error err = exactly::testing::new_error();
  if (vt->create(host.api(), cfg.get(), &self, &err) != EX_OK) {
    std::fprintf(stderr, "%s: create: %s\n", name, err.message);
    std::exit(2);
  }
  exactly::sdk::Partition p{0, "events-0", "events", 0, -1};
  ex_partition abi = p.to_abi();
  if (vt->assign(self, &abi, 1, &err) != EX_OK) {
    std::fprintf(stderr, "%s: assign: %s\n", name, err.message);
    std::exit(2);
  }
  Result r;
  std::vector<ex_record> recs(a.batch);
  ex_emitter em{sizeof(ex_emitter), reinterpret_cast<ex_emitter_ctx>(&r),
                [](ex_emitter_ctx c, size_t) {
                  ++reinterpret_cast<Result*>(c)->kept;
                  return int32_t{EX_OK};
                },
                [](ex_emitter_ctx, const ex_record*) { return int32_t{EX_OK}; },
                [](ex_emitter_ctx, size_t, const char*, size_t) { return int32_t{EX_OK}; }};
  size_t since_commit = 0;
  for (uint64_t i = 0; i < a.records; i += a.batch) {
    size_t n = std::min<uint64_t>(a.batch, a.records - i);
    for (size_t k = 0; k < n; ++k) {
      const std::string& v = in.values[i + k];
      recs[k] = ex_record{{nullptr, 0}, exactly::sdk::bytes(v), nullptr, 0, 0,
                          static_cast<int64_t>(i + k), -1};
    }
    ex_batch b{sizeof(ex_batch), sizeof(ex_record), recs.data(), n};
    auto t0 = Clock::now();
    if (vt->process(self, &b, &em, &err) != EX_OK) {
      std::fprintf(stderr, "%s: process: %s\n", name, err.message);
      std::exit(2);
    }
    since_commit += n;
    if (since_commit >= a.round || i + n >= a.records) {
      if (vt->prepare_commit(self, &err) != EX_OK || vt->commit(self, &err) != EX_OK) {
        std::fprintf(stderr, "%s: commit: %s\n", name, err.message);
        std::exit(2);
      }
      since_commit = 0;
    }
    r.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  vt->destroy(self);
  if (r.kept != in.distinct) {
    std::fprintf(stderr, "%s: emitted %llu records for %llu distinct ids\n", name,
                 static_cast<unsigned long long>(r.kept), static_cast<unsigned long long>(in.distinct));
    std::exit(1);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--records") a.records = std::stoull(v);
    else if (k == "--dup") a.dup = std::stod(v);
    else if (k == "--batch") a.batch = std::stoul(v);
    else if (k == "--round") a.round = std::stoul(v);
    else if (k == "--state") a.state = v;
    else if (k == "--slices") a.slices = v;
    else if (k == "--script-out") a.script_out = v;
    else if (k == "--shards") a.shards = split_list(v);
    else if (k == "--tls-shards") a.tls_shards = split_list(v);
    else if (k == "--tls-ca") a.tls_ca = v;
    else if (k == "--tls-cli") a.tls_cli = v;
    else {
      std::fprintf(stderr, "unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  if (a.shards.empty()) {
    std::fprintf(stderr, "--shards H:P[,H:P...] is required\n");
    return 2;
  }
  if (!a.script_out.empty()) std::ofstream(a.script_out) << exactly::dedupe::redis::kClaimScript;
  Library lib(std::string(EXACTLY_PLUGIN_DIR) + "/exactly_dedupe.so");
  Input in = make_input(a);
  std::printf("records %llu, distinct ids %llu, batch %zu, commit every %zu\n",
              static_cast<unsigned long long>(a.records),
              static_cast<unsigned long long>(in.distinct), a.batch, a.round);

  fs::remove_all(a.state);
  fs::create_directories(a.state);
  Result rocks = run_stage(lib, "dedupe",
                           {{"id.json", "/messageId"}, {"state.dir", a.state},
                            {"changelog", "off"}},
                           in, a);
  fs::remove_all(a.state);
  std::printf("rocksdb dedupe:        %10.0f records/s\n", a.records / rocks.seconds);

  auto redis_config = [&](size_t shards) {
    Pairs c = {{"id.json", "/messageId"}, {"retention.max.age", "86400000"},
               {"bucket.slices", a.slices}};
    for (size_t s = 0; s < shards; ++s) c.emplace_back("shards", a.shards[s]);
    return c;
  };
  for (auto& s : a.shards) cli(s, "flushall");
  const long long before = used_memory(a.shards[0]);
  Result one = run_stage(lib, "dedupe-redis", redis_config(1), in, a);
  const long long after = used_memory(a.shards[0]);
  std::printf("dedupe-redis 1 shard:  %10.0f records/s\n", a.records / one.seconds);
  std::printf("redis used_memory: %.1f bytes per claimed id (%lld -> %lld bytes, %s)\n",
              static_cast<double>(after - before) / static_cast<double>(in.distinct), before,
              after, cli(a.shards[0], "object encoding \"$(redis-cli -h " +
                                          a.shards[0].substr(0, a.shards[0].rfind(':')) + " -p " +
                                          a.shards[0].substr(a.shards[0].rfind(':') + 1) +
                                          " --scan | head -1)\"")
                         .c_str());
  double many_rate = 0;
  if (a.shards.size() > 1) {
    for (auto& s : a.shards) cli(s, "flushall");
    Result many = run_stage(lib, "dedupe-redis", redis_config(a.shards.size()), in, a);
    many_rate = a.records / many.seconds;
    std::printf("dedupe-redis %zu shards: %10.0f records/s\n", a.shards.size(), many_rate);
  }
  if (!a.tls_shards.empty()) {
    auto tls_config = [&](size_t shards) {
      Pairs c = {{"id.json", "/messageId"}, {"retention.max.age", "86400000"},
                 {"bucket.slices", a.slices}, {"tls", "true"}, {"tls.ca.file", a.tls_ca}};
      for (size_t s = 0; s < shards; ++s) c.emplace_back("shards", a.tls_shards[s]);
      return c;
    };
    for (auto& s : a.tls_shards) cli(s, "flushall", a.tls_cli);
    Result tls_one = run_stage(lib, "dedupe-redis", tls_config(1), in, a);
    std::printf("dedupe-redis 1 shard over TLS:  %10.0f records/s (%.2fx plaintext)\n",
                a.records / tls_one.seconds, one.seconds / tls_one.seconds);
    if (a.tls_shards.size() > 1) {
      for (auto& s : a.tls_shards) cli(s, "flushall", a.tls_cli);
      Result tls_many = run_stage(lib, "dedupe-redis", tls_config(a.tls_shards.size()), in, a);
      const double rate = a.records / tls_many.seconds;
      std::printf("dedupe-redis %zu shards over TLS: %10.0f records/s", a.tls_shards.size(), rate);
      if (many_rate > 0 && a.tls_shards.size() == a.shards.size())
        std::printf(" (%.2fx plaintext)", rate / many_rate);
      std::printf("\n");
    }
  }
  return 0;
}
