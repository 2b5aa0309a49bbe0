// Names that are compared byte for byte by the broker (group ids, transactional ids,
// topics) must not carry characters nobody can see: a zero-width space pasted into a
// group.id makes a different group that "should" be the same, and the pipeline then
// restart-loops against a group that has no offsets. Refused when the plugin is created,
// naming the key, the character and where it is.
#pragma once

#include <string>

namespace exactly::kafka {

// "" when `v` is fine, else what is wrong with it.
std::string invisible_text_problem(const std::string& v);

// Throws sdk::ConfigError(key, ...) when invisible_text_problem(v) is not "".
void require_visible_text(const std::string& key, const std::string& v);

}  // namespace exactly::kafka
