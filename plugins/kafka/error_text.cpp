#include "error_text.hpp"

namespace exactly::kafka {

std::string fit_error(const std::string& head, const std::string& tail, std::size_t max) {
  if (max == 0) return {};
  const std::size_t room = max - 1;  // the NUL
  if (head.size() + tail.size() <= room) return head + tail;
  static const std::string kCut = "...";
  if (tail.size() + kCut.size() >= room) return tail.substr(0, room);
  return head.substr(0, room - tail.size() - kCut.size()) + kCut + tail;
}

std::string with_reason(const std::string& what, const std::string& reason) {
  if (reason.empty() || what.find(reason) != std::string::npos) return what;
  return what + " (" + reason + ")";
}

}  // namespace exactly::kafka
