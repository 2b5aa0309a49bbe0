// How the host asks glibc's malloc to keep the memory it has freed, once, at startup.
//
// Why: with glibc's defaults a thread's arena gives a 64 MiB heap back to the kernel as
// soon as it is empty and maps a fresh one on the next burst of allocations, growing it
// a page or two per mprotect. A pipeline allocates and frees in bursts (librdkafka's
// copy of every produced record, freed on delivery; a fetch's buffers), so the
// pipeline thread and librdkafka's broker thread made ~500 mprotect calls a second each
// at 245k records/s, and every one takes the process's address-space lock for writing:
// behind a background thread that held it for reading (faulting a table's pages in at
// low priority), the pipeline thread waited up to 220 ms, and the broker thread's own
// page faults queued behind it (bpftrace of the D-state waits, docs/benchmarks.md,
// "The address-space lock"). Fresh pages also cost a fault and the kernel's zeroing
// each time, which in this VM class is several times the cost of reused ones.
//
// What: a top pad of 64 MiB, which in glibc 2.36 keeps a thread's arena from deleting
// or shrinking its heaps (a heap is only given back when more than the pad would be
// freed, and a heap is at most 64 MiB), and lets the main arena keep 64 MiB at its top;
// the trim threshold at 128 MiB; and the mmap threshold at 32 MiB, where glibc's own
// sliding threshold ends up anyway (setting the pad stops the sliding, which would
// otherwise leave every block from 128 KiB up to a mapping of its own).
// The cost: a process's resident memory does not shrink after a peak.
//
// An operator who sets any glibc.malloc tunable in GLIBC_TUNABLES keeps exactly that:
// the host then changes nothing.
#pragma once

#include <string>

namespace exactly::util {

struct MallocTuning {
  bool applied = false;
  std::string why_not;  // when not applied: what stopped it
};

// Call once, first thing in main(), before any thread starts.
MallocTuning keep_freed_memory();

}  // namespace exactly::util
