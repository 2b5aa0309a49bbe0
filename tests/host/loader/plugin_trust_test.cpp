// Plugin trust (issue "hardening"): the host runs no code from a library before it knows
// it is a plugin, and refuses plugin directories and files that other users can write.
#include <gtest/gtest.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>

#include "plugin/loader.hpp"
#include "test_util.hpp"

using namespace exactly;
using namespace exactly::test;

namespace {
const std::string kDir = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

std::string failure_of(const plugin::Registry& reg, const std::string& path) {
  for (const auto& f : reg.failures())
    if (f.path == path) return f.reason;
  return "";
}

// A private directory holding a copy of the testkit plugin.
fs::path private_copy(const std::string& tag) {
  fs::path d = temp_dir(tag);
  fs::copy_file(kDir + "/exactly_testkit.so", d / "exactly_testkit.so");
  chmod(d.c_str(), 0755);
  chmod((d / "exactly_testkit.so").c_str(), 0755);
  return d;
}
}  // namespace

TEST(PluginTrust, ALibraryThatIsNotAPluginIsNeverRun) {
  fs::path mark = temp_dir("trust") / "constructor-ran";
  auto r = run("EXACTLY_TEST_CTOR_MARKER=" + mark.string() + " " + exactly_bin() +
                   " plugins --plugin-path " + kDir,
               mark.parent_path());
  EXPECT_NE(r.out.find("exactly_not_a_plugin.so: not an exactly plugin"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(mark)) << "the host ran a non-plugin's constructor";
  // The mark works: loading the library for real leaves it.
  setenv("EXACTLY_TEST_CTOR_MARKER", mark.c_str(), 1);
  void* h = dlopen((kDir + "/exactly_not_a_plugin.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  unsetenv("EXACTLY_TEST_CTOR_MARKER");
  ASSERT_NE(h, nullptr);
  EXPECT_TRUE(fs::exists(mark));
}

TEST(PluginTrust, AWorldWritableDirectoryIsRefusedUnlessInsecure) {
  fs::path d = private_copy("trust");
  chmod(d.c_str(), 0777);
  plugin::Registry reg;
  reg.scan({d.string()});
  EXPECT_TRUE(reg.libraries().empty());
  std::string why = failure_of(reg, d.string());
  EXPECT_NE(why.find("writable by every user"), std::string::npos) << why;
  EXPECT_NE(why.find("chmod go-w"), std::string::npos) << why;
  plugin::Registry anyway;
  anyway.set_insecure(true);
  anyway.scan({d.string()});
  EXPECT_EQ(anyway.libraries().size(), 1u);
}

TEST(PluginTrust, AGroupWritablePluginFileIsRefused) {
  fs::path d = private_copy("trust");
  chmod((d / "exactly_testkit.so").c_str(), 0775);
  plugin::Registry reg;
  reg.scan({d.string()});
  EXPECT_TRUE(reg.libraries().empty());
  EXPECT_NE(failure_of(reg, (d / "exactly_testkit.so").string()).find("writable by its group"),
            std::string::npos);
}

TEST(PluginTrust, RelativeAndEmptyPathEntriesAreRefused) {
  plugin::Registry reg;
  reg.scan({"", "relative/plugins"});
  EXPECT_NE(failure_of(reg, "(empty)").find("empty plugin directory entry"), std::string::npos);
  EXPECT_NE(failure_of(reg, "relative/plugins").find("use an absolute path"), std::string::npos);
}

TEST(PluginTrust, ValidateNamesTheRefusedDirectoryAndInsecureLoadsIt) {
  fs::path d = private_copy("trust");
  chmod(d.c_str(), 0777);
  std::string pipeline =
      "pipelines:\n  - name: t\n    source: { plugin: counter }\n"
      "    sink: { plugin: faulty, config: { path: /tmp/x } }\n";
  write_file(d.parent_path() / (d.filename().string() + ".yaml"), "plugin.path: [" + d.string() + "]\n" + pipeline);
  auto r = run(exactly_bin() + " validate " + (d.parent_path() / (d.filename().string() + ".yaml")).string(), d);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("writable by every user"), std::string::npos) << r.err;
  write_file(d.parent_path() / (d.filename().string() + ".yaml"),
             "plugin.insecure: true\nplugin.path: [" + d.string() + "]\n" + pipeline);
  r = run(exactly_bin() + " validate " + (d.parent_path() / (d.filename().string() + ".yaml")).string(), d);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// A FIFO named *.so blocked the scan's open() until someone wrote to it: validate,
// plugins and run hung. It is named and skipped.
TEST(PluginTrust, AFifoNamedLikeAPluginIsNamedAndSkippedNotWaitedOn) {
  fs::path d = private_copy("trust");
  ASSERT_EQ(mkfifo((d / "evil.so").c_str(), 0644), 0);
  auto r = run("timeout -s KILL 20 " + exactly_bin() + " plugins --plugin-path " + d.string(), d);
  EXPECT_NE(r.exit_code, -1) << "killed: the scan waited on the FIFO";
  EXPECT_NE(r.out.find("evil.so: cannot load: not a regular file (a FIFO)"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("testkit"), std::string::npos) << "the plugin beside it was not loaded: " << r.out;
}

// The check follows a symlink to the directory that really holds the library: a safe
// directory linking into one every user can write is as unsafe as that one.
TEST(PluginTrust, ASymlinkIntoAWorldWritableDirectoryIsRefused) {
  fs::path real = private_copy("trust"), safe = temp_dir("trust");
  chmod(real.c_str(), 0777);
  chmod(safe.c_str(), 0755);
  fs::create_symlink(real / "exactly_testkit.so", safe / "exactly_testkit.so");
  plugin::Registry reg;
  reg.scan({safe.string()});
  EXPECT_TRUE(reg.libraries().empty());
  const std::string why = failure_of(reg, (safe / "exactly_testkit.so").string());
  EXPECT_NE(why.find("is inside '" + real.string() + "', which is writable by every user"), std::string::npos) << why;
}

// Whoever can write a plugin directory's parent can rename the directory away and put
// their own in its place; a sticky parent (as /tmp) lets nobody move another's entries.
TEST(PluginTrust, AParentEveryUserCanWriteIsRefusedUnlessSticky) {
  fs::path parent = temp_dir("trust");
  fs::path d = parent / "plugins";
  fs::create_directory(d);
  fs::copy_file(kDir + "/exactly_testkit.so", d / "exactly_testkit.so");
  chmod(d.c_str(), 0755);
  chmod((d / "exactly_testkit.so").c_str(), 0755);
  chmod(parent.c_str(), 0777);
  plugin::Registry reg;
  reg.scan({d.string()});
  EXPECT_TRUE(reg.libraries().empty());
  EXPECT_NE(failure_of(reg, d.string()).find("is inside '" + parent.string() + "'"), std::string::npos)
      << failure_of(reg, d.string());
  chmod(parent.c_str(), 01777);
  plugin::Registry sticky;
  sticky.scan({d.string()});
  EXPECT_EQ(sticky.libraries().size(), 1u) << failure_of(sticky, d.string());
}
