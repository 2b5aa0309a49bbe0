// Restoring a partition in its own thread (ABI 1.2 hold/release): the host holds that
// partition back at the source while the pipeline's other partitions keep flowing; the
// thread runs the same restore() as an assignment would, then releases the partition.
// Only the thread touches the partition's store until settle_restores() joins it on the
// pipeline thread.
#include "dedupe_transform.hpp"

namespace exactly::dedupe {

using sdk::Status;

int64_t DedupeTransform::restore_backlog(Part& part) {
  sdk::StateInfo info;
  if (!host_.state_open(changelog_topic_, part.partition, info)) return -1;
  int64_t from = part.store->durable().changelog;
  if (from < 0 || from > info.end) from = info.start;  // rebuilt from the start
  return info.end - from;
}

void DedupeTransform::start_background_restore(Part& part) {
  part.restoring = true;
  part.cancel = false;
  part.restored = false;
  host_.gauge("dedupe_restoring", 1, part.labels.c_str());
  part.restorer = std::thread([this, &part] {
    Status st;
    try {
      st = restore(part, &part.cancel);
    } catch (const std::exception& e) {
      st = Status::fatal(std::string("dedupe: background restore failed: ") + e.what());
    }
    // An instance torn down under a restore (a stop, or a restart after another stage's
    // failure; ABI 1.5 stopping()) takes its sink along: not a failure of its own, the
    // next owner restores the partition again.
    if (!st && !part.cancel.load() && host_.stopping())
      host_.info("dedupe: restoring partition '" + part.partition.name +
                 "' in the background ended with its instance (" + st.message() + ")");
    else if (!st && !part.cancel.load())
      host_.error("dedupe: restoring partition '" + part.partition.name +
                  "' in the background failed: " + st.message());
    part.restore_result = st;
    part.restored.store(true);
    // Only a store that is ready lets its partition flow again.
    if (st) host_.release(part.partition);
  });
}

void DedupeTransform::stop_restore(Part& part) {
  if (!part.restorer.joinable()) return;
  part.cancel = true;
  part.restorer.join();
  part.restoring = false;
  host_.gauge("dedupe_restoring", 0, part.labels.c_str());
}

Status DedupeTransform::settle_restores() {
  for (auto& [id, p] : parts_) {
    Part& part = *p;
    if (!part.restoring || !part.restored.load()) continue;
    part.restorer.join();
    part.restoring = false;
    host_.gauge("dedupe_restoring", 0, part.labels.c_str());
    if (!part.restore_result) return part.restore_result;
    find_rewind(part);
    report(part, std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count());
  }
  return Status::ok();
}

}  // namespace exactly::dedupe
