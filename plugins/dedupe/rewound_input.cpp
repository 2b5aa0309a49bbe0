// Input the group's offsets were moved back over (kafka-consumer-groups --reset-offsets,
// or any rewind of a source's committed position below what the store has seen).
//
// A record that finds its own claim (the claim's owner is this very offset) is a replay:
// its round was aborted or lost in a crash after the store had it, and its output may
// never have been committed, so it comes out again. That holds only past the last round
// known committed downstream; below it the output is committed, and a record replayed
// there entered twice: it is a duplicate. Without this the stage re-emitted every
// record of a rewound range (a QA pass, 2026-12-06: 19,027 of 19,027 duplicated).
//
// Where the committed output ends: with a changelog, the store's own position (its
// local copy is written only after the round has committed, and a restore reads only
// committed rounds). Without one, the store is written in prepare_commit, before the
// round commits, so its position may be one round ahead; the committed one is kept in
// a small file beside the store after each commit() (not synced: a stale or lost file
// only says less is committed, which re-emits as before and never drops).
#include "dedupe_transform.hpp"

#include <cstdio>
#include <fstream>
#include <string>

namespace exactly::dedupe {

namespace {
const char* const kCommittedFile = "exactly-committed-position";

int64_t read_committed(const std::string& dir) {
  std::ifstream in(dir + "/" + kCommittedFile);
  long long v = -1;
  if (!(in >> v) || v < 0) return -1;
  return v;
}

void write_committed(const std::string& dir, int64_t position) {
  const std::string path = dir + "/" + kCommittedFile;
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return;  // only a loss of precision: replays are emitted as before
  const bool ok = std::fprintf(f, "%lld\n", static_cast<long long>(position)) > 0;
  if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0)
    std::remove(tmp.c_str());
}
}  // namespace

void DedupeTransform::find_rewind(Part& part) {
  const StoreMeta& m = part.store->durable();
  const int64_t covered = covered_by(m);
  int64_t committed = changelog_on() ? covered : std::min(read_committed(part.store->dir()), covered);
  part.replays_from = -1;
  part.committed_written = changelog_on() ? -1 : committed;
  const int64_t start = part.partition.start_offset;
  // No committed position at all (a new group, a sink whose positions were deleted to
  // start its output over): the input is read again from its start and its first
  // copies come out again, as the first time. Only an explicit position below the
  // committed output is a rewind.
  if (start < 0 || committed <= 0 || start >= committed) return;
  part.replays_from = committed;
  host_.warn("dedupe: partition " + part.partition.name + " resumes at offset " + std::to_string(start) +
             ", before offset " + std::to_string(committed) + " up to which its output was committed (the " +
             "source's committed offsets were moved back): records of offsets " + std::to_string(start) +
             ".." + std::to_string(committed - 1) +
             " that came out then are dropped now as duplicates. To have them come out again, "
             "run the stage with an empty store (move " + part.store->dir() + " away" +
             (changelog_on() ? " and give it a new changelog.topic" : "") + ").");
}

void DedupeTransform::note_committed(Part& part) {
  const int64_t position = covered_by(part.store->durable());
  if (position <= part.committed_written) return;
  write_committed(part.store->dir(), position);
  part.committed_written = position;
}

}  // namespace exactly::dedupe
