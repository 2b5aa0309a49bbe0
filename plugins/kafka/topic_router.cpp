#include "topic_router.hpp"

#include <exactly/sdk.hpp>
#include <simdjson.h>

#include <cstring>
#include <vector>

namespace exactly::kafka {

namespace {

// Kafka's own rule for a topic name (Topic.validate in the broker): 1 to 249 characters of
// a-z A-Z 0-9 . _ -, and not "." or "..".
constexpr size_t kMaxTopicName = 249;

bool legal_topic(std::string_view t) {
  if (t.empty() || t.size() > kMaxTopicName || t == "." || t == "..") return false;
  for (char c : t)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

// The name as a reason can show it: at most 64 bytes, anything unprintable as \xNN.
std::string shown(std::string_view t) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "'";
  for (size_t i = 0; i < t.size() && i < 64; ++i) {
    unsigned char c = static_cast<unsigned char>(t[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  out += t.size() > 64 ? "'... (" + std::to_string(t.size()) + " bytes)" : "'";
  return out;
}

}  // namespace

std::string illegal_topic_reason(std::string_view topic) {
  // The broker's own topics: a producer may not write them. An exactly-once transaction
  // that adds one fails for good (the pipeline restarted into it for ever), and an
  // at-least-once round is refused at delivery and replayed for ever, writing the records
  // beside it again each time (QA).
  if (topic == "__consumer_offsets" || topic == "__transaction_state" || topic == "__cluster_metadata")
    return "topic " + shown(topic) + ", one of Kafka's internal topics, which no producer may write";
  if (legal_topic(topic)) return {};
  return "topic " + shown(topic) +
         " is not a legal Kafka topic name (1 to 249 characters of a-z A-Z 0-9 . _ -, not . or ..)";
}

void require_legal_topic(const std::string& key, std::string_view topic) {
  std::string why = illegal_topic_reason(topic);
  if (!why.empty()) throw sdk::ConfigError(key, why);
}

std::string TopicRouter::source() const {
  switch (mode_) {
    case Mode::Fixed: return "topic";
    case Mode::Header: return "header '" + value_ + "'";
    case Mode::Json: return "JSON pointer " + value_;
  }
  return {};
}

struct TopicRouter::Json {
  simdjson::ondemand::parser parser;
  std::vector<char> buf;  // reused: the value copied with simdjson's padding
  std::string topic;
};

TopicRouter::TopicRouter(const std::string& topic, const std::string& from) {
  if (!topic.empty() && !from.empty())
    throw sdk::ConfigError("topic.from", "give either `topic` or `topic.from`, not both");
  if (topic.empty() && from.empty())
    throw sdk::ConfigError("topic", "one of `topic` or `topic.from` is required");
  if (!topic.empty()) {
    mode_ = Mode::Fixed;
    value_ = topic;
    return;
  }
  if (from.rfind("header:", 0) == 0 && from.size() > 7) {
    mode_ = Mode::Header;
    value_ = from.substr(7);
    return;
  }
  if (from.rfind("json:", 0) == 0 && from.size() > 5 && from[5] == '/') {
    mode_ = Mode::Json;
    value_ = from.substr(5);
    json_ = std::make_unique<Json>();
    return;
  }
  throw sdk::ConfigError("topic.from",
                         "expected `header:NAME` or `json:/pointer`, got '" + from + "'");
}

TopicRouter::~TopicRouter() = default;
TopicRouter::TopicRouter(TopicRouter&&) noexcept = default;

bool TopicRouter::route(const ex_record& r, std::string_view& topic, std::string& reason) {
  switch (mode_) {
    case Mode::Fixed:
      topic = value_;
      return true;
    case Mode::Header: {
      auto h = sdk::header(r, value_);
      if (!h || h->empty()) {
        reason = "record has no (or an empty) header '" + value_ + "' naming its topic";
        return false;
      }
      topic = *h;
      return true;
    }
    case Mode::Json: {
      if (r.value.ptr == nullptr) {
        reason = "record has no value to take the topic from";
        return false;
      }
      auto& j = *json_;
      if (j.buf.size() < r.value.len + simdjson::SIMDJSON_PADDING)
        j.buf.resize(r.value.len + simdjson::SIMDJSON_PADDING);
      std::memcpy(j.buf.data(), r.value.ptr, r.value.len);
      simdjson::padded_string_view in(j.buf.data(), r.value.len, j.buf.size());
      auto doc = j.parser.iterate(in);
      std::string_view s;
      if (doc.error() != simdjson::SUCCESS ||
          doc.value_unsafe().at_pointer(value_).get_string().get(s) != simdjson::SUCCESS) {
        reason = "value has no string at JSON pointer " + value_ + " naming its topic";
        return false;
      }
      if (s.empty()) {
        reason = "empty topic name at JSON pointer " + value_;
        return false;
      }
      j.topic.assign(s);
      topic = j.topic;
      return true;
    }
  }
  return false;
}

}  // namespace exactly::kafka
