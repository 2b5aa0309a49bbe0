// The "kafka.v1" checkpoint: what the kafka source hands the host as its positions and
// what the kafka sink turns into send_offsets_to_transaction. Both halves live in this
// plugin, so the format is private to it; the host only compares the format name.
//
// Layout (little endian):
//   "XKC1"                      magic
//   u32 len, bytes              consumer group metadata (rd_kafka_consumer_group_metadata_write)
//   u32 count
//   count x { u16 len, topic bytes, i32 partition, i64 next offset to consume }
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace exactly::kafka {

inline constexpr std::string_view kCheckpointFormat = "kafka.v1";

struct TopicOffset {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;  // the next offset to consume
  bool operator==(const TopicOffset&) const = default;
};

struct KafkaCheckpoint {
  std::string group_metadata;  // opaque bytes from librdkafka, may be empty
  std::vector<TopicOffset> offsets;
};

namespace codec_detail {
inline constexpr char kMagic[4] = {'X', 'K', 'C', '1'};

template <typename T>
void put(std::string& out, T v) {
  unsigned char b[sizeof(T)];
  auto u = static_cast<std::make_unsigned_t<T>>(v);
  for (size_t i = 0; i < sizeof(T); ++i) b[i] = static_cast<unsigned char>(u >> (8 * i));
  out.append(reinterpret_cast<const char*>(b), sizeof(T));
}

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  template <typename T>
  bool get(T& v) {
    if (s_.size() - pos_ < sizeof(T)) return false;
    std::make_unsigned_t<T> u = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      u |= static_cast<std::make_unsigned_t<T>>(static_cast<unsigned char>(s_[pos_ + i]))
           << (8 * i);
    pos_ += sizeof(T);
    v = static_cast<T>(u);
    return true;
  }
  bool bytes(size_t n, std::string& out) {
    if (s_.size() - pos_ < n) return false;
    out.assign(s_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool at_end() const { return pos_ == s_.size(); }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};
}  // namespace codec_detail

inline std::string encode_checkpoint(const KafkaCheckpoint& cp) {
  using codec_detail::put;
  std::string out;
  out.reserve(16 + cp.group_metadata.size() + cp.offsets.size() * 32);
  out.append(codec_detail::kMagic, 4);
  put<uint32_t>(out, static_cast<uint32_t>(cp.group_metadata.size()));
  out.append(cp.group_metadata);
  put<uint32_t>(out, static_cast<uint32_t>(cp.offsets.size()));
  for (const auto& o : cp.offsets) {
    put<uint16_t>(out, static_cast<uint16_t>(o.topic.size()));
    out.append(o.topic);
    put<int32_t>(out, o.partition);
    put<int64_t>(out, o.offset);
  }
  return out;
}

// nullopt when the bytes are not a well-formed kafka.v1 checkpoint.
inline std::optional<KafkaCheckpoint> decode_checkpoint(std::string_view data) {
  if (data.size() < 4 || std::memcmp(data.data(), codec_detail::kMagic, 4) != 0)
    return std::nullopt;
  codec_detail::Reader r(data.substr(4));
  KafkaCheckpoint cp;
  uint32_t md_len = 0, count = 0;
  if (!r.get(md_len) || !r.bytes(md_len, cp.group_metadata) || !r.get(count))
    return std::nullopt;
  // Each entry takes at least 14 bytes; refuse counts the data cannot hold.
  if (count > data.size() / 14) return std::nullopt;
  cp.offsets.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    TopicOffset o;
    uint16_t tlen = 0;
    if (!r.get(tlen) || !r.bytes(tlen, o.topic) || !r.get(o.partition) || !r.get(o.offset))
      return std::nullopt;
    cp.offsets.push_back(std::move(o));
  }
  if (!r.at_end()) return std::nullopt;
  return cp;
}

}  // namespace exactly::kafka
