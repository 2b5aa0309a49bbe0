// The loader through real .so files: refusal messages, and the rule that a library
// stays loaded while any object made from it lives.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "config/loader.hpp"
#include "engine/components.hpp"
#include "plugin/loader.hpp"
#include "test_util.hpp"

using namespace exactly;

namespace {
const std::string kDir = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

bool is_loaded(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return false;
  dlclose(h);  // drop the reference NOLOAD just took
  return true;
}

TEST(PluginLoader, NotAPluginGetsAClearError) {
  plugin::Registry reg;
  std::string why;
  auto lib = reg.load(kDir + "/exactly_not_a_plugin.so", &why);
  EXPECT_EQ(lib, nullptr);
  EXPECT_EQ(why, "not an exactly plugin: no exported function 'exactly_plugin_descriptor'");
}

TEST(PluginLoader, NewerAbiIsRefusedWithBothVersions) {
  plugin::Registry reg;
  std::string why;
  auto lib = reg.load(kDir + "/exactly_abi_mismatch.so", &why);
  EXPECT_EQ(lib, nullptr);
  const std::string host = std::to_string(EX_ABI_VERSION_MAJOR) + "." + std::to_string(EX_ABI_VERSION_MINOR);
  EXPECT_NE(why.find("built for plugin ABI 2.0, this host speaks " + host), std::string::npos) << why;
}

// ABI 1.4: a library whose build facts are not this host's is refused before anything of
// it is read, with the file and the fact in the reason.
TEST(PluginLoader, APluginBuiltWithOtherFactsIsRefusedNamingFileAndFact) {
  plugin::Registry reg;
  std::string why;
  auto lib = reg.load(kDir + "/exactly_abi_wrong_facts.so", &why);
  EXPECT_EQ(lib, nullptr);
  EXPECT_EQ(why, "built with sizeof(ex_record) " +
                     std::to_string(sizeof(ex_record) + 8) + ", this host has " +
                     std::to_string(sizeof(ex_record)) +
                     ": the plugin was built for another platform or against an edited "
                     "plugin_abi.h; rebuild it against this host's SDK");
  ASSERT_EQ(reg.failures().size(), 1u);
  EXPECT_EQ(reg.failures()[0].path, kDir + "/exactly_abi_wrong_facts.so");
}

// The same through the binary: `exactly plugins` lists the library by path with the fact.
TEST(PluginLoader, ThePluginsCommandListsALibraryOfOtherFactsWithItsPathAndFact) {
  auto r = test::run(test::exactly_bin() + " plugins --plugin-path " + kDir);
  EXPECT_NE(r.out.find("FAILED " + kDir + "/exactly_abi_wrong_facts.so: built with sizeof(ex_record) " +
                       std::to_string(sizeof(ex_record) + 8) + ", this host has " +
                       std::to_string(sizeof(ex_record)) + ":"),
            std::string::npos)
      << r.out << r.err;
  EXPECT_NE(r.out.find("old_transform"), std::string::npos) << "the 1.0 fixture loads: " << r.out;
}

// A $EXACTLY_PLUGIN_PATH entry that is not there is listed as FAILED (it was skipped in
// silence, and a typo in a systemd drop-in left only "unknown plugin", QA); the places
// beside the binary may be absent without a word.
TEST(PluginLoader, AMissingDirectoryOfThePluginPathVariableIsListedAsFailed) {
  auto r = test::run("EXACTLY_PLUGIN_PATH=/nonexistent/exactly-plugins:" + kDir + " " + test::exactly_bin() +
                     " plugins");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("FAILED /nonexistent/exactly-plugins: no such directory (named in $EXACTLY_PLUGIN_PATH)"),
            std::string::npos)
      << r.out << r.err;
  EXPECT_NE(r.out.find("old_transform"), std::string::npos) << "the other entry is still read: " << r.out;
  auto plain = test::run(test::exactly_bin() + " plugins");
  EXPECT_EQ(plain.out.find("no such directory"), std::string::npos) << plain.out;
}

// The 1.0 fixture's descriptor ends before the 1.4 build facts: loaded without the check.
TEST(PluginLoader, APluginOfTheOlderMinorLoadsWithoutTheNewerMembers) {
  plugin::Registry reg;
  std::string why;
  auto lib = reg.load(kDir + "/exactly_abi_1_0.so", &why);
  ASSERT_NE(lib, nullptr) << why;
  EXPECT_EQ(lib->abi_version, 1u << 16);
  auto t = reg.find(EX_KIND_TRANSFORM, "old_transform");
  ASSERT_NE(t.component, nullptr);
  EXPECT_NE(t.component->transform.process, nullptr);
  EXPECT_EQ(t.component->transform.positions, nullptr);  // 1.1: absent, not garbage
  auto s = reg.find(EX_KIND_SINK, "old_sink");
  ASSERT_NE(s.component, nullptr);
  EXPECT_EQ(s.component->sink.state_open, nullptr);
  EXPECT_EQ(s.component->sink.state_position, nullptr);
  EXPECT_EQ(t.component->transform.validate, nullptr);  // 1.3
  EXPECT_EQ(s.component->sink.validate, nullptr);
  EXPECT_EQ(s.component->sink.completed, nullptr);  // 1.4: no completion window
  // 1.6: config fields end before `flags`: walked with their own size, no flag read.
  ASSERT_EQ(s.component->fields.size(), 2u);
  EXPECT_EQ(s.component->fields[0].key, "path");
  EXPECT_EQ(s.component->fields[1].key, "mode");
  EXPECT_EQ(s.component->fields[1].default_value, "a");
  EXPECT_FALSE(s.component->fields[0].exclusive_path);
  EXPECT_FALSE(s.component->fields[1].exclusive_path);
}

// ABI 1.3: loading a config runs each component's own `validate`; an older-minor plugin
// has none, and its components pass on the schema check alone.
TEST(PluginLoader, AConfigWithOlderMinorComponentsValidates) {
  auto dir = test::temp_dir("loader");
  test::write_file(dir / "p.yaml", "plugin.path: [" + kDir + "]\n"
                                   "pipelines:\n  - name: x\n"
                                   "    source: { plugin: counter }\n"
                                   "    transforms: [ { plugin: old_transform } ]\n"
                                   "    sink: { plugin: old_sink }\n");
  plugin::Registry reg;
  auto r = config::load({(dir / "p.yaml").string()}, reg);
  std::string errors;
  for (auto& e : r.errors) errors += e.str() + "\n";
  EXPECT_TRUE(r.ok()) << errors;
  ASSERT_EQ(r.spec.pipelines.size(), 1u);
  EXPECT_EQ(r.spec.pipelines[0].sink.component->library->abi_version, 1u << 16);
}

// The SDK exports validate only for a class that declares one (the testkit's do not).
TEST(PluginLoader, TheSdkExportsValidateOnlyWhenTheClassHasOne) {
  plugin::Registry reg;
  reg.scan({kDir, std::string(EXACTLY_PLUGIN_DIR)});
  auto counter = reg.find(EX_KIND_SOURCE, "counter");
  ASSERT_NE(counter.component, nullptr);
  EXPECT_EQ(counter.component->source.validate, nullptr);
  auto gen = reg.find(EX_KIND_SOURCE, "generator");
  ASSERT_NE(gen.component, nullptr);
  EXPECT_NE(gen.component->source.validate, nullptr);
}

TEST(PluginLoader, ScanRecordsFailuresAndKeepsGoodLibraries) {
  plugin::Registry reg;
  reg.scan({kDir});
  EXPECT_NE(reg.find(EX_KIND_SOURCE, "counter").component, nullptr);
  ASSERT_EQ(reg.failures().size(), 3u);  // not a plugin, a newer major, other build facts
  for (auto& f : reg.failures()) EXPECT_FALSE(f.reason.empty());
}

TEST(PluginLoader, UnknownPluginMessageMentionsLoadFailures) {
  auto dir = test::temp_dir("loader");
  test::write_file(dir / "p.yaml", "plugin.path: [" + kDir + "]\npipelines:\n  - name: x\n"
                                   "    source: { plugin: nope }\n"
                                   "    sink: { plugin: discard }\n");
  plugin::Registry reg;
  auto r = config::load({(dir / "p.yaml").string()}, reg);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors[0].message.find("3 libraries or directories on plugin.path failed to load (first: "),
            std::string::npos)
      << r.errors[0].message;
}

TEST(PluginLoader, LibraryOutlivesRegistryWhileAnObjectLives) {
  const std::string path = kDir + "/exactly_testkit.so";
  ASSERT_FALSE(is_loaded(path)) << "another test left the library loaded";
  auto dir = test::temp_dir("loader");
  test::write_file(dir / "p.yaml", "plugin.path: [" + kDir + "]\npipelines:\n  - name: x\n"
                                   "    source: { plugin: counter }\n"
                                   "    sink: { plugin: discard }\n");
  std::unique_ptr<engine::Source> source;
  {
    plugin::Registry reg;
    auto r = config::load({(dir / "p.yaml").string()}, reg);
    ASSERT_TRUE(r.ok());
    auto binding = std::make_unique<engine::HostBinding>();
    binding->api.struct_size = sizeof(ex_host_api);
    source = std::make_unique<engine::Source>(r.spec.pipelines[0].source, std::move(binding));
    ASSERT_TRUE(source->create().ok());
  }  // registry and config gone: only the source holds the library now
  EXPECT_TRUE(is_loaded(path));
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr);
  auto live = reinterpret_cast<int (*)()>(dlsym(h, "exactly_testkit_live_objects"));
  ASSERT_NE(live, nullptr);
  EXPECT_EQ(live(), 1);
  dlclose(h);
  source.reset();  // the object goes first, then the last library reference
  EXPECT_FALSE(is_loaded(path));
}

}  // namespace

namespace {
// One defect per library (tests/host/fixtures/abi_bad_schema_plugin.cpp).
struct BadSchema {
  int defect;
  std::string why;
};
}  // namespace

// A descriptor the plugin got wrong is refused, naming what is wrong, and nothing reads
// through it: a NULL array with a count crashed every command (plugins, validate, run)
// before, even with no pipeline using the library.
TEST(PluginLoader, ADescriptorWithABadSchemaIsRefusedNamingTheDefect) {
  const std::string dir = std::string(EXACTLY_BUILD_DIR) + "/test-plugins-bad";
  const BadSchema cases[] = {
      {1, "component 'bad_schema': fields is NULL but field_count is 2"},
      {2, "component 'bad_schema': config field 'i' is declared twice"},
      {3, "transform 'bad_schema' is declared twice in this library"},
      {4, "component 'bad_schema': config field 'i': default 'abc' is not a value of its type"},
      {5, "component 'bad_schema': config field 's': default 'zzz' is not one of its allowed values"},
      {6, "components is NULL but component_count is 1"},
      {7, "component 'bad_schema': config field 'i': default '30s' is not canonical: write it in "
          "milliseconds (e.g. '30000')"},
      {8, "component 'bad_schema': config field #0 has an empty key or one with a space, a control "
          "character or '|'"},
      {9, "component 'bad_schema': config field 'i' has unknown type 99"},
      {10, "component 'bad_schema': config field 'i' is required and has a default (which would never be "
           "used): drop one"},
      {11, "component 'bad_schema': config field #0 has an empty key or one with a space, a control "
           "character or '|'"},
  };
  for (const auto& c : cases) {
    plugin::Registry reg;
    std::string why;
    const std::string path = dir + "/exactly_bad_schema_" + std::to_string(c.defect) + ".so";
    EXPECT_EQ(reg.load(path, &why), nullptr) << path;
    EXPECT_EQ(why, c.why) << path;
  }
  // Through the binary: listed as FAILED with the reason, the host's own plugins still there.
  auto r = test::run(test::exactly_bin() + " plugins --plugin-path " + dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("FAILED " + dir + "/exactly_bad_schema_1.so: component 'bad_schema': fields is NULL"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("filter"), std::string::npos) << r.out;
}

// `exactly plugins --plugin-path DIR` takes a relative DIR from the working directory, as
// the authoring guide runs it (`--plugin-path build`).
TEST(PluginLoader, PluginsTakesARelativeDirectoryFromTheWorkingDirectory) {
  auto r = test::run(std::string("cd ") + EXACTLY_BUILD_DIR + " && " + test::exactly_bin() +
                     " plugins --plugin-path test-plugins");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(kDir + "/exactly_testkit.so"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("depends on the working directory"), std::string::npos) << r.out;
}
