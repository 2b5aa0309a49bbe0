#include "topic_rules.hpp"

#include <cerrno>
#include <cstdlib>

namespace exactly::kafka {

namespace {

int64_t limit_of(const std::map<std::string, std::string>& c, const char* key) {
  auto it = c.find(key);
  if (it == c.end() || it->second.empty()) return TopicRules::kNoLimit;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (errno != 0 || end == it->second.c_str() || *end != '\0' || v < 0) return TopicRules::kNoLimit;
  return v;
}

bool has_word(std::string_view list, std::string_view word) {
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find(',', at);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view item = list.substr(at, comma - at);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.size() == word.size()) {
      bool same = true;
      for (size_t i = 0; i < item.size() && same; ++i)
        same = (item[i] | 0x20) == (word[i] | 0x20);
      if (same) return true;
    }
    at = comma + 1;
  }
  return false;
}

}  // namespace

TopicRules topic_rules_from(const std::map<std::string, std::string>& configs) {
  TopicRules r;
  auto policy = configs.find("cleanup.policy");
  r.compacted = policy != configs.end() && has_word(policy->second, "compact");
  auto type = configs.find("message.timestamp.type");
  if (type != configs.end() && type->second == "LogAppendTime") return r;
  const int64_t difference = limit_of(configs, "message.timestamp.difference.max.ms");
  const int64_t before = limit_of(configs, "message.timestamp.before.max.ms");
  const int64_t after = limit_of(configs, "message.timestamp.after.max.ms");
  r.before_ms = before != TopicRules::kNoLimit ? before : difference;
  r.after_ms = after != TopicRules::kNoLimit ? after : difference;
  return r;
}

std::string TopicRules::refusal(const ex_record& r, int64_t now_ms, std::string_view topic) const {
  if (compacted && r.key.ptr == nullptr)
    return "kafka sink: record without a key for topic " + std::string(topic) +
           ", which is compacted (cleanup.policy compact): the broker takes no record without "
           "a key there";
  if (r.timestamp_ms < 0) return {};
  // Kafka compares with its own clock as it appends; one that passes here and is refused
  // there (at the very edge of before.max.ms) is older still at the replay, and stopped here.
  if (before_ms != kNoLimit && now_ms - r.timestamp_ms > before_ms)
    return "kafka sink: record timestamp " + std::to_string(r.timestamp_ms) + " is " +
           std::to_string((now_ms - r.timestamp_ms) / 1000) + " s in the past, more than topic " +
           std::string(topic) + " takes (message.timestamp.before.max.ms=" + std::to_string(before_ms) + ")";
  if (after_ms != kNoLimit && r.timestamp_ms - now_ms > after_ms)
    return "kafka sink: record timestamp " + std::to_string(r.timestamp_ms) + " is " +
           std::to_string((r.timestamp_ms - now_ms) / 1000) + " s in the future, more than topic " +
           std::string(topic) + " takes (message.timestamp.after.max.ms=" + std::to_string(after_ms) + ")";
  return {};
}

}  // namespace exactly::kafka
