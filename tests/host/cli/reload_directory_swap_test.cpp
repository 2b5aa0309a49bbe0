// Config directories replaced whole while the host runs, as deploys do: a new directory
// renamed over the old one (mv conf conf.old; mv conf.new conf), and a Kubernetes
// ConfigMap volume, whose files are symlinks through `..data`, a symlink the kubelet
// swaps by renaming a new one over it. Both used to end hot reload silently: the watch
// stayed on the old directory, and `..data` was ignored as a hidden name.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

std::string pipeline(const std::string& name, const fs::path& dir) {
  return "  - name: " + name + "\n"
         "    source: { plugin: generator, config: { count: 0, rate: 50 } }\n"
         "    sink: { plugin: file, config: { path: " + (dir / (name + ".jsonl")).string() +
         ", fsync: false } }\n";
}

TEST(ReloadDirectorySwap, ARenamedInDirectoryAndASwappedConfigMapAreFollowed) {
  const fs::path dir = temp_dir("reload-dir-swap"), log = dir / "host.log";
  const fs::path conf = dir / "conf", kube = dir / "kube";
  fs::create_directories(conf);
  write_file(conf / "a.yaml", "pipelines:\n" + pipeline("one", dir));
  // A ConfigMap volume: kube/p.yaml -> ..data/p.yaml, ..data -> ..v1
  fs::create_directories(kube / "..v1");
  write_file(kube / "..v1" / "p.yaml", "pipelines:\n" + pipeline("kube1", dir));
  fs::create_directory_symlink("..v1", kube / "..data");
  fs::create_symlink("..data/p.yaml", kube / "p.yaml");

  Child host({exactly_bin(), "run", conf.string(), kube.string()}, log);
  ASSERT_TRUE(wait_for_text(log, "started 2 pipeline", 20)) << read_file(log);

  // A deploy: the new directory is prepared beside the old and renamed into place.
  fs::create_directories(dir / "conf.new");
  write_file(dir / "conf.new" / "a.yaml", "pipelines:\n" + pipeline("one", dir));
  write_file(dir / "conf.new" / "b.yaml", "pipelines:\n" + pipeline("two", dir));
  fs::rename(conf, dir / "conf.old");
  fs::rename(dir / "conf.new", conf);
  EXPECT_TRUE(wait_for_text(log, "added=two", 20)) << read_file(log);
  // ... and the directory now at that path is the one watched.
  write_file(conf / "c.yaml", "pipelines:\n" + pipeline("three", dir));
  EXPECT_TRUE(wait_for_text(log, "added=three", 20)) << read_file(log);

  // The kubelet's update: a new version directory, a new ..data renamed over the old.
  fs::create_directories(kube / "..v2");
  write_file(kube / "..v2" / "p.yaml", "pipelines:\n" + pipeline("kube1", dir) + pipeline("kube2", dir));
  fs::create_directory_symlink("..v2", kube / "..data_tmp");
  ASSERT_EQ(std::rename((kube / "..data_tmp").c_str(), (kube / "..data").c_str()), 0);
  EXPECT_TRUE(wait_for_text(log, "added=kube2", 20)) << read_file(log);

  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0) << read_file(log);
}

// The same ConfigMap, with the host given its file rather than its directory
// (`exactly run /etc/config/p.yaml`): the swap of `..data` beside the file reloads too,
// and so does an edit of a file a named symlink points to in another directory.
TEST(ReloadDirectorySwap, ASwappedConfigMapIsFollowedWhenTheFileIsNamed) {
  const fs::path dir = temp_dir("reload-file-swap"), log = dir / "host.log";
  const fs::path kube = dir / "kube", elsewhere = dir / "elsewhere";
  fs::create_directories(kube / "..v1");
  write_file(kube / "..v1" / "p.yaml", "pipelines:\n" + pipeline("kube1", dir));
  fs::create_directory_symlink("..v1", kube / "..data");
  fs::create_symlink("..data/p.yaml", kube / "p.yaml");
  fs::create_directories(elsewhere);
  write_file(elsewhere / "q.yaml", "pipelines:\n" + pipeline("q1", dir));
  fs::create_symlink(elsewhere / "q.yaml", dir / "q.yaml");

  Child host({exactly_bin(), "run", (kube / "p.yaml").string(), (dir / "q.yaml").string()}, log);
  ASSERT_TRUE(wait_for_text(log, "started 2 pipeline", 20)) << read_file(log);

  fs::create_directories(kube / "..v2");
  write_file(kube / "..v2" / "p.yaml", "pipelines:\n" + pipeline("kube1", dir) + pipeline("kube2", dir));
  fs::create_directory_symlink("..v2", kube / "..data_tmp");
  ASSERT_EQ(std::rename((kube / "..data_tmp").c_str(), (kube / "..data").c_str()), 0);
  EXPECT_TRUE(wait_for_text(log, "added=kube2", 20)) << read_file(log);

  write_file(elsewhere / "q.yaml", "pipelines:\n" + pipeline("q1", dir) + pipeline("q2", dir));
  EXPECT_TRUE(wait_for_text(log, "added=q2", 20)) << read_file(log);

  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0) << read_file(log);
}

// A named file in a directory a deploy replaces: a release directory reached through a
// `current` symlink swapped by rename (Capistrano's `mv -T`), and a plain directory
// renamed over. Both used to end hot reload for that file in silence: the watch stayed
// on the old directory, and edits of the new file were never seen (QA).
TEST(ReloadDirectorySwap, ANamedFileIsFollowedWhenItsDirectoryIsReplaced) {
  const fs::path dir = temp_dir("reload-named-parent"), log = dir / "host.log";
  fs::create_directories(dir / "releases" / "v1");
  write_file(dir / "releases" / "v1" / "p.yaml", "pipelines:\n" + pipeline("rel1", dir));
  fs::create_directory_symlink("releases/v1", dir / "current");
  fs::create_directories(dir / "conf");
  write_file(dir / "conf" / "q.yaml", "pipelines:\n" + pipeline("plain1", dir));

  Child host({exactly_bin(), "run", (dir / "current" / "p.yaml").string(), (dir / "conf" / "q.yaml").string()},
             log);
  ASSERT_TRUE(wait_for_text(log, "started 2 pipeline", 20)) << read_file(log);

  // The release: a new directory, the symlink swapped by a rename over it.
  fs::create_directories(dir / "releases" / "v2");
  write_file(dir / "releases" / "v2" / "p.yaml", "pipelines:\n" + pipeline("rel1", dir) + pipeline("rel2", dir));
  fs::create_directory_symlink("releases/v2", dir / "current.tmp");
  ASSERT_EQ(std::rename((dir / "current.tmp").c_str(), (dir / "current").c_str()), 0);
  EXPECT_TRUE(wait_for_text(log, "added=rel2", 20)) << read_file(log);
  // Later edits land in v2, and are seen; the old release going away changes nothing.
  write_file(dir / "releases" / "v2" / "p.yaml",
             "pipelines:\n" + pipeline("rel1", dir) + pipeline("rel2", dir) + pipeline("rel3", dir));
  EXPECT_TRUE(wait_for_text(log, "added=rel3", 20)) << read_file(log);
  fs::remove_all(dir / "releases" / "v1");
  write_file(dir / "releases" / "v2" / "p.yaml", "pipelines:\n" + pipeline("rel1", dir) + pipeline("rel4", dir));
  EXPECT_TRUE(wait_for_text(log, "added=rel4", 20)) << read_file(log);

  // A plain directory renamed over the named file's own.
  fs::create_directories(dir / "conf.new");
  write_file(dir / "conf.new" / "q.yaml", "pipelines:\n" + pipeline("plain1", dir) + pipeline("plain2", dir));
  fs::rename(dir / "conf", dir / "conf.old");
  fs::rename(dir / "conf.new", dir / "conf");
  EXPECT_TRUE(wait_for_text(log, "added=plain2", 20)) << read_file(log);
  write_file(dir / "conf" / "q.yaml",
             "pipelines:\n" + pipeline("plain1", dir) + pipeline("plain2", dir) + pipeline("plain3", dir));
  EXPECT_TRUE(wait_for_text(log, "added=plain3", 20)) << read_file(log);
  // The old directory is not the config any more: its edits reload nothing.
  const auto reloads = read_file(log).size();
  write_file(dir / "conf.old" / "q.yaml", "pipelines:\n" + pipeline("stale", dir));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(read_file(log).substr(reloads).find("stale"), std::string::npos) << read_file(log);

  host.kill(SIGTERM);
  EXPECT_EQ(host.wait(), 0) << read_file(log);
}

}  // namespace
