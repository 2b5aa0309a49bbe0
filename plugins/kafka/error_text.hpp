#pragma once

#include <cstddef>
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

}  // namespace exactly::kafka
