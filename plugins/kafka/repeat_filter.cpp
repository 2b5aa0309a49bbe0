#include "repeat_filter.hpp"

#include <iterator>
#include <utility>

namespace exactly::kafka {

bool RepeatFilter::pass(const std::string& line, int64_t now_ms, uint64_t& suppressed) {
  suppressed = 0;
  // Bounded: lines not seen for a window are forgotten once many distinct ones piled up.
  if (seen_.size() > 256)
    for (auto it = seen_.begin(); it != seen_.end();)
      it = now_ms - it->second.logged_ms >= window_ms_ ? seen_.erase(it) : std::next(it);
  auto [it, fresh] = seen_.try_emplace(line);
  Seen& s = it->second;
  if (!fresh && now_ms - s.logged_ms < window_ms_) {
    ++s.suppressed;
    return false;
  }
  suppressed = std::exchange(s.suppressed, 0);
  s.logged_ms = now_ms;
  return true;
}

}  // namespace exactly::kafka
