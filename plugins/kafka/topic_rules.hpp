// What a topic's own configuration makes the broker refuse record by record: a record
// without a key in a compacted topic (INVALID_RECORD), and a CreateTime further from the
// broker's clock than message.timestamp.before.max.ms / after.max.ms allow
// (INVALID_TIMESTAMP). The broker refuses the whole batch that carries one such record
// and librdkafka (2.0) cannot tell which record it was, so a round that wrote one failed
// at delivery and was replayed for ever: at_least_once re-sent its good records every
// time (QA: 25 copies each), exactly_once stalled. The sink reads these settings once per
// topic and sends a record that breaks them to the error policy at write instead.
#pragma once

#include <exactly/plugin_abi.h>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>

namespace exactly::kafka {

struct TopicRules {
  static constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();
  bool compacted = false;          // cleanup.policy has compact
  int64_t before_ms = kNoLimit;    // how far before the broker's clock a CreateTime may be
  int64_t after_ms = kNoLimit;     // and after it
  bool any() const { return compacted || before_ms != kNoLimit || after_ms != kNoLimit; }

  // Why the broker would refuse `r` in `topic` at wall-clock `now_ms`, or empty. A record
  // without a timestamp gets the producer's clock, which passes.
  std::string refusal(const ex_record& r, int64_t now_ms, std::string_view topic) const;
};

// The rules from a topic's configs as DescribeConfigs reports them (every config, with
// the broker's defaults for those the topic does not set). LogAppendTime topics take any
// CreateTime; a before/after limit left at its default falls back to the deprecated
// message.timestamp.difference.max.ms, as the broker does.
TopicRules topic_rules_from(const std::map<std::string, std::string>& configs);

}  // namespace exactly::kafka
