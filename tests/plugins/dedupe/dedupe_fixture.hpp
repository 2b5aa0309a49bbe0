// Shared set-up for the dedupe plugin tests: the real .so, a fresh state directory per
// test, and small record builders.
#pragma once

#include <exactly/testing/harness.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace dedupe_test {

namespace fs = std::filesystem;
using exactly::sdk::Partition;
using exactly::testing::FakeHost;
using exactly::testing::Library;
using exactly::testing::OwnedRecord;
using exactly::testing::Pairs;
using exactly::testing::TransformHarness;
using exactly::testing::TransformOutput;

inline Library& library() {
  static Library lib(std::string(EXACTLY_PLUGIN_DIR) + "/exactly_dedupe.so");
  return lib;
}

inline Partition part(int32_t id, std::string name, int64_t start_offset = -1) {
  Partition p;
  p.id = id;
  p.name = std::move(name);
  p.topic = "events";
  p.number = id;
  p.start_offset = start_offset;
  return p;
}

// A JSON event whose messageId is `id`.
inline OwnedRecord event(const std::string& id, int64_t offset, int32_t partition = 0,
                         const std::string& body = "x") {
  return exactly::testing::rec(std::nullopt,
                               "{\"messageId\":\"" + id + "\",\"body\":\"" + body + "\"}",
                               partition, offset);
}

// Events "id-<from>" .. "id-<to - 1>" at consecutive offsets from `offset` (advanced).
inline std::vector<OwnedRecord> range(int from, int to, int64_t& offset, int32_t partition = 0) {
  std::vector<OwnedRecord> out;
  for (int i = from; i < to; ++i) out.push_back(event("id-" + std::to_string(i), offset++, partition));
  return out;
}

inline std::vector<size_t> kept(const TransformOutput& o) { return o.kept; }

// Whether the stage logged a line containing `what`.
inline bool logged(const FakeHost& h, const std::string& what) {
  for (const auto& [level, text] : h.logs)
    if (text.find(what) != std::string::npos) return true;
  return false;
}

// Every line the stage logged, for a failed assertion's message.
inline std::string all_logs(const FakeHost& h) {
  std::string out;
  for (const auto& [level, text] : h.logs) out += text + "\n";
  return out;
}

// `config` with `key` set to `value` in place (added when absent).
inline Pairs with(Pairs config, const std::string& key, const std::string& value) {
  for (auto& [k, v] : config)
    if (k == key) {
      v = value;
      return config;
    }
  config.emplace_back(key, value);
  return config;
}

// SST files in a store's directory: one per fold, while the store is a row of them.
// Files of folded claims in a store: SST files (claims.format sst, and the sequence
// index's own flushes) or the store's own claims files (claims-<end>.xc).
inline size_t folded_files(const fs::path& dir) {
  size_t n = 0;
  for (auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ".sst" || e.path().extension() == ".xc";
  return n;
}

// What a kill -9 of the host would leave of a store that may still be open: a recursive
// copy, started over when a file vanished under it (a background fold or merge adopted
// or removed one mid-copy; seen as "cannot copy: No such file or directory" in 4 of 300
// runs on a loaded machine). Each copy is of files the store had at one moment.
inline void copy_live_store(const fs::path& from, const fs::path& to) {
  for (int attempt = 0;; ++attempt) {
    try {
      fs::copy(from, to, fs::copy_options::recursive);
      return;
    } catch (const fs::filesystem_error& e) {
      if (e.code() != std::errc::no_such_file_or_directory || attempt >= 50) throw;
      fs::remove_all(to);
    }
  }
}

class DedupeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("exactly-dedupe-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    stage_.reset();
    fs::remove_all(dir_);
  }

  Pairs config(Pairs extra = {}) const {
    Pairs c = {{"id.json", "/messageId"}, {"state.dir", dir_.string()},
               {"rocksdb.block.cache.size", "8388608"}, {"rocksdb.write.buffer.size", "4194304"}};
    for (auto& kv : extra)
      if (kv.first == "id.key" || kv.first == "id.header") c.erase(c.begin());  // id.json
    for (auto& kv : extra) {
      auto it = std::find_if(c.begin(), c.end(), [&](auto& x) { return x.first == kv.first; });
      if (it != c.end()) *it = kv;
      else c.push_back(kv);
    }
    return c;
  }

  // A new stage instance (the old one, if any, is destroyed first), assigned `parts`.
  TransformHarness& start(Pairs extra = {}, std::vector<Partition> parts = {part(0, "events-0")}) {
    stage_.reset();  // the store directory is locked while a stage lives
    stage_ = std::make_unique<TransformHarness>(library(), "dedupe", config(std::move(extra)),
                                                &host_);
    EXPECT_TRUE(stage_->ok()) << stage_->create_status().message();
    if (!parts.empty()) {
      auto st = stage_->assign(parts);
      EXPECT_TRUE(st.is_ok()) << st.message();
    }
    return *stage_;
  }

  // prepare_commit + commit, as the host does at a commit point.
  void commit_round() {
    auto st = stage_->prepare_commit();
    ASSERT_TRUE(st.is_ok()) << st.message();
    host_.commit_state();  // the sink's commit (a no-op without changelogs)
    st = stage_->commit();
    ASSERT_TRUE(st.is_ok()) << st.message();
  }

  double metric(const std::string& name, const std::string& partition = "events-0") const {
    return host_.metric(name + "{partition=" + partition + "}");
  }

  fs::path dir_;
  FakeHost host_;
  std::unique_ptr<TransformHarness> stage_;
};

inline std::string uuid(std::mt19937_64& rng) {
  static const char* hex = "0123456789abcdef";
  std::string s(36, '-');
  for (size_t i = 0; i < 36; ++i)
    if (i != 8 && i != 13 && i != 18 && i != 23) s[i] = hex[rng() & 15];
  return s;
}

}  // namespace dedupe_test
