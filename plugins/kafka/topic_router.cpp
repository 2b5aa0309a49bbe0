#include "topic_router.hpp"

#include <exactly/sdk.hpp>
#include <simdjson.h>

#include <cstring>
#include <vector>

namespace exactly::kafka {

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
