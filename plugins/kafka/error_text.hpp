#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace exactly::kafka {

// An error message that crosses the C ABI gets EX_ERROR_MESSAGE_MAX bytes; the SDK keeps
// the start and the last third of a longer one. Some of librdkafka's texts are long (a
// fenced send_offsets_to_transaction lists its partitions, and its fatal reason repeats
// the same text), and the hint after them (what to do about a copied state.dir, with the
// id file's path) can be longer than that third. fit_error() keeps `tail` whole and shortens
// `head` (marked with "...") so that both fit in `max` bytes including the NUL; a tail
// that does not fit by itself is cut at its end.
std::string fit_error(const std::string& head, const std::string& tail, std::size_t max);

// "what (reason)", without the reason when `what` already contains it (librdkafka's
// fatal reason is often the very text of the error that reported it).
std::string with_reason(const std::string& what, const std::string& reason);

// The hint after a producer fenced by another with its transactional.id. `identity_file`:
// where the id was kept ("" when the id was configured); `process_age_s`: how long this
// process has run (negative when unknown). In a process that started minutes ago or less,
// the likely cause is named first: the group's other hosts fence the id of a member that
// left, and a host restarted before its previous run was seen leaving has that run's id;
// that happens once or twice and passes. Only if it repeats is a copied state.dir the cause.
std::string fenced_hint(const std::string& txn_id, const std::string& identity_file, double process_age_s);

// The hint after a consumer fenced for its group.instance.id (static membership,
// FENCED_INSTANCE_ID). Two causes: another live member with the same id (a copied
// state.dir, or the same id set by hand on two hosts), or this member itself, when the
// broker that was its group coordinator died: librdkafka 2.0.2 rejoins with a new member
// id, and a request of its earlier membership answered after that is fenced (QA r10: every
// static host of a group, each with its own id, was fenced once when the coordinator's
// broker was killed). The first passes with the rebuild; only a repeat points at a copy.
std::string fenced_instance_hint(const std::string& instance_id);

// The hint after a fence that came while the transaction had been open `open_ms`, past
// `timeout_ms` (transaction.timeout): the coordinator aborted it and bumped the epoch.
std::string timed_out_transaction_hint(int64_t open_ms, int64_t timeout_ms);

}  // namespace exactly::kafka
