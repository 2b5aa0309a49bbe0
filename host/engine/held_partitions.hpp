// Partitions a stage holds back while it prepares them (ABI 1.2 hold/release): paused at
// the source from their start offset while the pipeline's other partitions flow.
// hold() and everything else run on the pipeline thread; release() on any thread.
#pragma once

#include <exactly/plugin_abi.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace exactly::engine {

class HeldPartitions {
 public:
  struct Part {
    int32_t id = 0;
    std::string name, topic;
    int32_t number = 0;
    int64_t start = -1;  // where the source continues it
    ex_partition abi() const;
  };

  // One more holder of `p` (a stage); true when it must now be paused at the source.
  bool hold(const ex_partition& p);
  void release(int32_t id);  // thread-safe
  // Pauses asked for since the last call.
  std::vector<Part> take_pauses();
  // Partitions whose last holder released them (they are no longer held).
  std::vector<Part> take_resumes();
  // A revoked partition is no longer held (and needs no resume).
  void forget(int32_t id);
  void clear();
  bool held(int32_t id) const { return held_.count(id) != 0; }
  bool empty() const { return held_.empty(); }

 private:
  struct Entry {
    Part part;
    int holders = 0;
  };
  std::map<int32_t, Entry> held_;
  std::vector<Part> to_pause_;
  std::mutex mu_;
  std::vector<int32_t> released_;  // guarded by mu_
};

}  // namespace exactly::engine
