// StateDirLock across processes: the second process is refused while the first lives,
// also when the lock file was deleted by hand, and gets the directory once the first dies.
#include <exactly/state_dir_lock.hpp>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using exactly::sdk::StateDirLock;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("exactly-lock-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Tries the lock in a child process: 0 refused (naming a holder), 1 taken, 2 other. The
// child has a copy of this process's registry of held locks: it names the directory
// another way ("dir/."), so that only the kernel's locks can refuse it.
int try_in_child(const fs::path& dir) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    StateDirLock lock;
    auto st = lock.acquire((dir / ".").string(), ".exactly-lock", "pipeline 'b' stage dedupe");
    if (st.is_ok()) ::_exit(1);
    ::_exit(st.message().find("is in use by") != std::string::npos ? 0 : 2);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}

}  // namespace

TEST(StateDirLock, ASecondProcessIsRefusedWhileTheFirstHoldsTheDirectory) {
  const fs::path dir = fresh_dir("second");
  StateDirLock lock;
  ASSERT_TRUE(lock.acquire(dir.string(), ".exactly-lock", "pipeline 'a' stage dedupe").is_ok());
  EXPECT_EQ(try_in_child(dir), 0);
  lock.release();
  EXPECT_EQ(try_in_child(dir), 1);
  fs::remove_all(dir);
}

TEST(StateDirLock, ADeletedLockFileDoesNotLetASecondProcessIn) {
  const fs::path dir = fresh_dir("deleted");
  StateDirLock lock;
  ASSERT_TRUE(lock.acquire(dir.string(), ".exactly-lock", "pipeline 'a' stage dedupe").is_ok());
  fs::remove(dir / ".exactly-lock");
  EXPECT_EQ(try_in_child(dir), 0);
  fs::remove(dir / ".exactly-lock");
  lock.release();
  EXPECT_EQ(try_in_child(dir), 1);
  fs::remove_all(dir);
}

TEST(StateDirLock, AKilledHolderLeavesNoStaleLock) {
  const fs::path dir = fresh_dir("killed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    StateDirLock lock;
    if (!lock.acquire(dir.string(), ".exactly-lock", "pipeline 'a' stage dedupe").is_ok()) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  // Until the child holds it, a try here may win: wait for its name in the file.
  for (int i = 0; i < 500; ++i) {
    std::error_code ec;
    if (fs::file_size(dir / ".exactly-lock", ec) > 0 && !ec) break;
    ::usleep(10000);
  }
  StateDirLock mine;
  EXPECT_FALSE(mine.acquire(dir.string(), ".exactly-lock", "pipeline 'c' stage dedupe").is_ok());
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  EXPECT_TRUE(mine.acquire(dir.string(), ".exactly-lock", "pipeline 'c' stage dedupe").is_ok());
  mine.release();
  fs::remove_all(dir);
}
