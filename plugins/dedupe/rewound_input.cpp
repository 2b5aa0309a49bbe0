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
// Where the committed output ends is known only with a changelog: the store's own
// position. Its local copy is written only after the round has committed, restores read
// only committed rounds, and the changelog's sink (the kafka sink) commits all it was
// given (a transaction, or a flush before the offsets). Without a changelog the store's
// position is where the source had read to, not what the sink committed: an http sink's
// window keeps records in flight across rounds and commits the source only up to the
// lowest of them, so a start below the store's position is also a sink's unfinished
// work, which must come out. There a rewound range comes out again, as before.
#include "dedupe_transform.hpp"

#include <string>

namespace exactly::dedupe {

void DedupeTransform::find_rewind(Part& part) {
  part.replays_from = -1;
  const int64_t committed = covered_by(part.store->durable());
  const int64_t start = part.partition.start_offset;
  // No committed position at all (a new group, offsets deleted to start over): the input
  // is read again from its start and its first copies come out again, as the first time.
  // Only an explicit position below the committed output is a rewind. A group.id changed
  // by a reload did that without a word (QA: 675,945 records out again), so it is said.
  if (start < 0 && committed > 0) {
    host_.warn("dedupe: partition " + part.partition.name + " has no committed offset in the "
               "source's group (a new group.id, or its offsets deleted), but its store has seen "
               "the input up to offset " + std::to_string(committed - 1) + ": the source reads "
               "it again from its auto.offset.reset position, and the first copy of every id "
               "it has seen comes out again, as the first time (later copies are still dropped). "
               "If the group changed by mistake, set group.id back; the old group's offsets "
               "are still there.");
    return;
  }
  if (!changelog_on()) return;
  if (start < 0 || committed <= 0 || start >= committed) return;
  part.replays_from = committed;
  host_.warn("dedupe: partition " + part.partition.name + " resumes at offset " + std::to_string(start) +
             ", before offset " + std::to_string(committed) + " up to which its output was committed (the " +
             "source's committed offsets were moved back): records of offsets " + std::to_string(start) +
             ".." + std::to_string(committed - 1) +
             " that came out then are dropped now as duplicates. To have them come out again, "
             "run the stage with an empty store (move " + part.store->dir() +
             " away) and a new changelog.topic.");
}

}  // namespace exactly::dedupe
