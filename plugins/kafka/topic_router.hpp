// Where a sink record goes: a fixed topic, or a topic named by each record (a header, or
// a string inside a JSON value addressed by a JSON pointer).
#pragma once

#include <exactly/plugin_abi.h>

#include <memory>
#include <string>
#include <string_view>

namespace exactly::kafka {

// Why Kafka cannot have a topic of this name (not 1 to 249 of a-z A-Z 0-9 . _ -, or
// . or ..), shown safely; empty when it can.
std::string illegal_topic_reason(std::string_view topic);
// Throws ConfigError(key) with that reason.
void require_legal_topic(const std::string& key, std::string_view topic);

class TopicRouter {
 public:
  // `topic` and `from` as configured (one of them non-empty); throws ConfigError.
  TopicRouter(const std::string& topic, const std::string& from);
  ~TopicRouter();
  TopicRouter(TopicRouter&&) noexcept;

  bool is_fixed() const { return mode_ == Mode::Fixed; }
  const std::string& fixed_topic() const { return value_; }

  // The record's topic (valid until the next call), or false with `reason` set. The
  // name is not checked here: the sink checks each name once (KafkaSink::routed_handle).
  bool route(const ex_record& r, std::string_view& topic, std::string& reason);
  // Where the topic comes from, for messages: "header 'x'", "JSON pointer /p" or "topic".
  std::string source() const;

 private:
  enum class Mode { Fixed, Header, Json };
  struct Json;
  Mode mode_ = Mode::Fixed;
  std::string value_;  // topic, header name or JSON pointer
  std::unique_ptr<Json> json_;
};

}  // namespace exactly::kafka
