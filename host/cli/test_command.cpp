// `exactly test PIPELINE.yaml...`: runs each pipeline's transforms (the real plugins,
// found and checked as `run` does) over the records of its test file and compares what
// comes out; no source, sink or broker. Exit 0 all cases pass, 1 a case failed, 2 the
// files are wrong, 3 a case did not finish within stage.timeout, 4 a plugin called
// exit(); a plugin's crash is reported in one line and kills the process.
#include "cli/commands.hpp"
#include "cli/case_watch.hpp"
#include "cli/test_cases.hpp"
#include "config/loader.hpp"
#include "engine/fatal_signal.hpp"
#include "engine/plugin_call.hpp"
#include "engine/unexpected_exit.hpp"

#include <exactly/testing/harness.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>

namespace exactly::cli {
namespace fs = std::filesystem;
using exactly::testing::OwnedRecord;

namespace {

struct RunResult {
  std::vector<OwnedRecord> out;
  std::vector<std::string> rejected;  // "stage: reason"
  std::string error;                  // a stage failed (create, assign, process, commit)
  std::map<int32_t, std::pair<std::string, int32_t>> partitions;  // id -> topic, number
};

std::string shorten(const std::string& s, size_t n = 300) {
  return s.size() <= n ? s : s.substr(0, n) + "... (" + std::to_string(s.size()) + " bytes)";
}

std::string headers_text(const std::vector<std::pair<std::string, std::string>>& h) {
  if (h.empty()) return "(none)";
  std::string out = "{";
  for (size_t i = 0; i < h.size(); ++i) out += (i ? ", " : "") + h[i].first + ": " + h[i].second;
  return out + "}";
}

// The transforms of `p` over the case's input: in batches, then one commit.
RunResult run_case(const config::PipelineSpec& p, const TestCase& c, const fs::path& scratch) {
  RunResult r;
  // Partitions in order of appearance; offsets continue per partition.
  std::map<std::pair<std::string, int32_t>, int32_t> ids;
  std::map<int32_t, int64_t> next_offset;
  std::vector<OwnedRecord> input;
  for (const auto& t : c.input) {
    auto [it, added] = ids.emplace(std::make_pair(t.topic, t.partition), static_cast<int32_t>(ids.size()));
    if (added) r.partitions[it->second] = {t.topic, t.partition};
    OwnedRecord o;
    o.key = t.key;
    o.value = t.value;
    o.headers = t.headers;
    o.partition = it->second;
    int64_t& next = next_offset[it->second];
    if (t.offset < 0 && next == std::numeric_limits<int64_t>::max()) {
      r.error = t.where + ": no offset is left after " + std::to_string(next - 1) +
                " for this record (give it one)";
      return r;
    }
    o.offset = t.offset >= 0 ? t.offset : next;
    next = o.offset + 1;  // test_cases.cpp keeps given offsets below INT64_MAX
    o.timestamp_ms = t.timestamp_ms;
    input.push_back(std::move(o));
  }
  std::vector<sdk::Partition> parts;
  for (const auto& [id, tp] : r.partitions)
    parts.push_back(sdk::Partition{id, tp.first + "-" + std::to_string(tp.second), tp.first, tp.second, 0});

  std::vector<std::unique_ptr<exactly::testing::Library>> libs;
  std::vector<std::unique_ptr<exactly::testing::FakeHost>> hosts;
  std::vector<std::unique_ptr<exactly::testing::TransformHarness>> stages;
  // Where each stage's calls run, as `run` marks them: a crash or an exit() inside one is
  // named by its stage and library, not "outside any plugin call" (QA).
  struct Site {
    std::string pipeline, stage, label;
    engine::CallSite site{};
  };
  std::vector<std::unique_ptr<Site>> sites;
  for (size_t i = 0; i < p.transforms.size(); ++i) {
    const auto& spec = p.transforms[i];
    const std::string stage = spec.where + " (" + spec.plugin + ")";
    auto& site = *sites.emplace_back(std::make_unique<Site>());
    site.pipeline = p.name;
    site.stage = spec.where + "/" + spec.plugin;
    site.label = "pipeline '" + p.name + "', stage '" + site.stage + "' (" + spec.library->path + ")";
    site.site = engine::CallSite{&site.pipeline, &site.stage, &site.label};
    exactly::testing::Pairs values;
    for (const auto& [k, v] : spec.values) {
      // Never the pipeline's own state: it may be in use by a running host.
      if (k == "state.dir") values.emplace_back(k, (scratch / std::to_string(i)).string());
      else values.emplace_back(k, v);
    }
    try {
      libs.push_back(std::make_unique<exactly::testing::Library>(spec.library->path));
      hosts.push_back(std::make_unique<exactly::testing::FakeHost>(p.name));
      engine::InPluginCall call(site.site, "create");
      stages.push_back(std::make_unique<exactly::testing::TransformHarness>(
          *libs.back(), spec.plugin, values, hosts.back().get()));
    } catch (const std::exception& e) {
      r.error = stage + ": " + e.what();
      return r;
    }
    auto& h = *stages.back();
    if (!h.ok()) {
      r.error = stage + ": create failed: " + h.create_status().message() +
                (h.create_status().key().empty() ? "" : " (key " + h.create_status().key() + ")");
      return r;
    }
    engine::InPluginCall call(site.site, "assign");
    if (auto st = h.assign(parts); !st) {
      r.error = stage + ": assign failed: " + st.message();
      return r;
    }
  }
  const size_t step = c.batch ? c.batch : std::max<size_t>(input.size(), 1);
  for (size_t from = 0; from < input.size(); from += step) {
    std::vector<OwnedRecord> batch(input.begin() + static_cast<std::ptrdiff_t>(from),
                                   input.begin() + static_cast<std::ptrdiff_t>(std::min(input.size(), from + step)));
    for (size_t i = 0; i < stages.size() && !batch.empty(); ++i) {
      sdk::Status st;
      engine::InPluginCall call(sites[i]->site, "process");
      auto out = stages[i]->process(batch, &st);
      if (!st) {
        r.error = p.transforms[i].where + " (" + p.transforms[i].plugin + "): process failed: " + st.message();
        return r;
      }
      for (auto& [idx, why] : out.rejected)
        r.rejected.push_back(p.transforms[i].where + " (" + p.transforms[i].plugin + "): " + why);
      batch = std::move(out.records);
    }
    for (auto& o : batch) r.out.push_back(std::move(o));
  }
  for (size_t i = 0; i < stages.size(); ++i) {
    engine::InPluginCall call(sites[i]->site, "commit");
    sdk::Status st = stages[i]->prepare_commit();
    if (st) st = stages[i]->commit();
    if (!st) {
      r.error = p.transforms[i].where + " (" + p.transforms[i].plugin + "): commit failed: " + st.message();
      return r;
    }
  }
  return r;
}

// Differences between what came out and what the case expects; empty when they agree.
std::vector<std::string> compare(const TestCase& c, const RunResult& r) {
  std::vector<std::string> diffs;
  if (r.rejected.size() != c.rejected) {
    diffs.push_back("expected " + std::to_string(c.rejected) + " rejected record(s), got " +
                    std::to_string(r.rejected.size()));
    for (size_t i = 0; i < r.rejected.size() && i < 5; ++i) diffs.push_back("  rejected: " + r.rejected[i]);
  }
  if (r.out.size() != c.expect.size())
    diffs.push_back("expected " + std::to_string(c.expect.size()) + " record(s) out, got " +
                    std::to_string(r.out.size()));
  const size_t n = std::min(r.out.size(), c.expect.size());
  size_t shown = 0;
  for (size_t i = 0; i < n && shown < 5; ++i) {
    const TestRecord& e = c.expect[i];
    const OwnedRecord& a = r.out[i];
    std::vector<std::string> what;
    bool value_ok;
    if (e.value_json) {
      try {
        value_ok = same_json(*e.value_json, YAML::Load(a.value));
      } catch (const YAML::Exception&) {
        value_ok = false;
      }
    } else {
      value_ok = e.value == a.value;
    }
    if (!value_ok)
      what.push_back("value\n      expected: " + shorten(e.value) + "\n      actual:   " + shorten(a.value));
    if (e.key && a.key != e.key)
      what.push_back("key\n      expected: " + shorten(*e.key) + "\n      actual:   " +
                     (a.key ? shorten(*a.key) : std::string("(none)")));
    // Headers are written as a map: compared whatever their order.
    if (!e.headers.empty()) {
      auto sorted = [](std::vector<std::pair<std::string, std::string>> h) {
        std::stable_sort(h.begin(), h.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        return h;
      };
      if (sorted(e.headers) != sorted(a.headers))
        what.push_back("headers\n      expected: " + shorten(headers_text(e.headers)) +
                       "\n      actual:   " + shorten(headers_text(a.headers)));
    }
    auto tp = r.partitions.find(a.partition);
    if (tp != r.partitions.end() && ((e.topic_given && tp->second.first != e.topic) ||
                                     (e.partition_given && tp->second.second != e.partition)))
      what.push_back("partition: expected " + (e.topic_given ? e.topic : std::string("(any topic)")) +
                     "-" + (e.partition_given ? std::to_string(e.partition) : std::string("*")) +
                     ", actual " + tp->second.first + "-" + std::to_string(tp->second.second));
    if (what.empty()) continue;
    ++shown;
    std::string line = "record " + std::to_string(i + 1) + " (" + e.where + "): ";
    for (size_t k = 0; k < what.size(); ++k) line += (k ? "\n    " : "") + what[k];
    diffs.push_back(line);
  }
  for (size_t i = n; i < r.out.size() && i < n + 3; ++i)
    diffs.push_back("unexpected record " + std::to_string(i + 1) + ": " + shorten(r.out[i].value));
  for (size_t i = n; i < c.expect.size() && i < n + 3; ++i)
    diffs.push_back("missing record " + std::to_string(i + 1) + " (" + c.expect[i].where + "): " +
                    shorten(c.expect[i].value));
  return diffs;
}

int run_tests(const std::vector<std::string>& files, const fs::path& scratch) {
  CaseWatch watch;
  int passed = 0, failed = 0, bad = 0;
  for (const auto& file : files) {
    const std::string tf = test_file_for(file);
    if (!fs::is_regular_file(file)) {
      std::fprintf(stderr, "%s: %s\n", file.c_str(),
                   fs::is_directory(file) ? "a directory: name the pipeline files (each with its <name>.test.yaml)"
                                          : "no such pipeline file");
      ++bad;
      continue;
    }
    if (!fs::exists(tf)) {
      std::fprintf(stderr, "%s: no test file: write %s (docs/testing-pipelines.md)\n", file.c_str(), tf.c_str());
      ++bad;
      continue;
    }
    plugin::Registry registry;
    auto loaded = config::load({file}, registry);
    if (!loaded.ok()) {
      for (auto& d : loaded.errors) std::fprintf(stderr, "%s\n", d.str().c_str());
      ++bad;
      continue;
    }
    std::vector<TestCase> cases;
    try {
      cases = load_test_cases(tf);
    } catch (const TestFileError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      ++bad;
      continue;
    }
    for (size_t k = 0; k < cases.size(); ++k) {
      const TestCase& c = cases[k];
      const config::PipelineSpec* p = nullptr;
      for (const auto& q : loaded.spec.pipelines)
        if (c.pipeline.empty() ? loaded.spec.pipelines.size() == 1 : q.name == c.pipeline) p = &q;
      if (p == nullptr) {
        std::fprintf(stderr, "%s: %s\n", c.where.c_str(),
                     c.pipeline.empty() ? "the file has several pipelines: say which one (pipeline: NAME)"
                                        : ("no pipeline named '" + c.pipeline + "' in " + file).c_str());
        ++bad;
        continue;
      }
      const fs::path dir = scratch / (std::to_string(passed + failed + bad) + "-" + std::to_string(k));
      watch.start(p->name + ": " + c.name + " (" + c.where + ")", loaded.spec.stage_timeout_ms, scratch);
      RunResult r = run_case(*p, c, dir);
      watch.stop();
      std::vector<std::string> diffs;
      if (!r.error.empty()) diffs.push_back(r.error);
      else diffs = compare(c, r);
      if (diffs.empty()) {
        ++passed;
        std::printf("ok    %s: %s (%zu in, %zu out, %zu rejected)\n", p->name.c_str(), c.name.c_str(),
                    c.input.size(), r.out.size(), r.rejected.size());
      } else {
        ++failed;
        std::printf("FAIL  %s: %s (%s)\n", p->name.c_str(), c.name.c_str(), c.where.c_str());
        for (const auto& d : diffs) std::printf("    %s\n", d.c_str());
      }
    }
  }
  std::printf("%d passed, %d failed%s\n", passed, failed,
              bad ? (", " + std::to_string(bad) + " could not run").c_str() : "");
  if (bad) return 2;
  return failed ? 1 : 0;
}

}  // namespace

int cmd_test(const std::vector<std::string>& files) {
  if (files.empty()) {
    std::fprintf(stderr, "exactly test: give the pipeline file(s) to test (each with a <name>.test.yaml beside it)\n");
    return 2;
  }
  char tmpl[] = "/tmp/exactly-test.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::fprintf(stderr, "exactly test: cannot create a scratch directory in /tmp\n");
    return 2;
  }
  const fs::path scratch = tmpl;
  // As in `run`: a plugin's crash is named in one line, and its exit() (its own status,
  // 0 included, would have passed every case) ends the command with code 4. From here on
  // only _Exit ends the process.
  engine::install_fatal_signal_report();
  engine::install_unexpected_exit_report("the test did not finish");
  // Registered after it, so run before it (on_exit runs handlers in reverse): a plugin's
  // exit() leaves no scratch directory behind.
  static fs::path scratch_at_exit;
  scratch_at_exit = scratch;
  on_exit([](int, void*) {
    std::error_code ec;
    fs::remove_all(scratch_at_exit, ec);
  }, nullptr);
  const int code = run_tests(files, scratch);
  std::error_code ec;
  fs::remove_all(scratch, ec);
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace exactly::cli
