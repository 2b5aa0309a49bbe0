// A fold runs at SCHED_IDLE (it yields every core to the pipeline and the broker) and is
// raised back to nice 10 once it is late or waited for (background_priority.hpp).
#include "background_priority.hpp"
#include "dedupe_fixture.hpp"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace dedupe_test {
namespace {

using exactly::dedupe::can_leave_idle;
using exactly::dedupe::YieldingThread;

struct Sched {
  int policy = -1;
  int nice = 99;
};

// Fields 19 (nice) and 41 (policy) of /proc/self/task/TID/stat.
Sched sched_of(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(f, line);
  Sched s;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return s;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  for (int n = 3; rest >> field; ++n) {
    if (n == 19) s.nice = std::stoi(field);
    if (n == 41) s.policy = std::stoi(field);
  }
  return s;
}

// The thread of this process named `name`, or 0.
pid_t thread_named(const std::string& name) {
  for (auto& e : fs::directory_iterator("/proc/self/task")) {
    std::ifstream f(e.path() / "comm");
    std::string comm;
    std::getline(f, comm);
    if (comm == name) return static_cast<pid_t>(std::stol(e.path().filename().string()));
  }
  return 0;
}

// A thread that lowers itself through `y`, then waits for `done`.
struct Lowered {
  explicit Lowered(YieldingThread& y) {
    t = std::thread([this, &y] {
      was_idle = y.lower();
      tid.store(gettid());
      while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      y.leave();
    });
    while (tid.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Lowered() {
    done.store(true);
    t.join();
  }
  std::thread t;
  std::atomic<pid_t> tid{0};
  std::atomic<bool> done{false};
  bool was_idle = false;
};

TEST(YieldingThread, RunsIdleUntilRaisedBackToNiceTen) {
  YieldingThread y;
  Lowered fold(y);
  const bool idle = can_leave_idle();  // root or CAP_SYS_NICE here; nice 10 without
  EXPECT_EQ(fold.was_idle, idle);
  Sched s = sched_of(fold.tid);
  EXPECT_EQ(s.policy, idle ? SCHED_IDLE : SCHED_OTHER);
  if (!idle) EXPECT_EQ(s.nice, 10);
  EXPECT_EQ(y.raise(), idle);  // true only when it took the thread out of SCHED_IDLE
  s = sched_of(fold.tid);
  EXPECT_EQ(s.policy, SCHED_OTHER);
  EXPECT_EQ(s.nice, 10);
  EXPECT_FALSE(y.raise());  // once
}

TEST(YieldingThread, ARaiseBeforeTheThreadLowersKeepsItAtNiceTen) {
  YieldingThread y;
  EXPECT_FALSE(y.raise());  // no thread yet
  Lowered fold(y);
  EXPECT_FALSE(fold.was_idle);
  const Sched s = sched_of(fold.tid);
  EXPECT_EQ(s.policy, SCHED_OTHER);
  EXPECT_EQ(s.nice, 10);
}

TEST(YieldingThread, ARaiseAfterTheThreadLeftReachesNoThread) {
  YieldingThread y;
  pid_t tid = 0;
  {
    Lowered fold(y);
    tid = fold.tid;
  }  // left and joined
  EXPECT_NE(tid, 0);
  EXPECT_FALSE(y.raise());
}

TEST_F(DedupeTest, AFoldRunsAtIdlePriorityAndIsRaisedOnceTheNextTableFills) {
  // 13 MB write buffer: a fold threshold of 270,833 claims, above the 262,144 from which a
  // fold paces itself (over up to 8 s while the next table stays empty).
  Pairs big = {{"rocksdb.write.buffer.size", "13000000"}};
  auto& t = start(big);
  int64_t off = 0;
  t.process(range(0, 271000, off));
  commit_round();  // the fold starts
  pid_t fold = 0;
  for (int i = 0; i < 500 && fold == 0; ++i) {
    fold = thread_named("dedupe-fold");
    if (fold == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_NE(fold, 0) << "no dedupe-fold thread after the first fill";
  const bool idle = can_leave_idle();
  EXPECT_EQ(sched_of(fold).policy, idle ? SCHED_IDLE : SCHED_OTHER);
  EXPECT_EQ(metric("dedupe_fold_raised_total"), 0);

  // The whole next table in one round: when it is committed the paced fold has not ended
  // (the table's count moves only at commits), so the fold counts as late and is raised.
  t.process(range(271000, 542000, off));
  ASSERT_EQ(thread_named("dedupe-fold"), fold)
      << "the fold ended before the next table filled (paced over 8 s): the machine stalled";
  commit_round();
  EXPECT_EQ(metric("dedupe_fold_raised_total"), idle ? 1 : 0);
  if (thread_named("dedupe-fold") == fold) EXPECT_EQ(sched_of(fold).policy, SCHED_OTHER);
  // Every id is still known, from the folded file or the tables.
  EXPECT_THAT(t.process(range(0, 542000, off)).kept, ::testing::IsEmpty());
}

}  // namespace
}  // namespace dedupe_test
