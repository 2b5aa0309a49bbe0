#include "generator_source.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace exactly::generator {

using sdk::ConfigError;
using sdk::Status;

Settings Settings::from(const sdk::Config& c) {
  Settings s;
  s.count = c.get_int("count", 1000000);
  if (s.count < 0) throw ConfigError("count", "must be >= 0 (0 = unbounded)");
  s.rate = c.get_int("rate", 0);
  if (s.rate < 0) throw ConfigError("rate", "must be >= 0 (0 = as fast as possible)");
  s.batch_size = c.get_int("batch.size", 1024);
  if (s.batch_size < 1 || s.batch_size > (1 << 20))
    throw ConfigError("batch.size", "must be between 1 and 1048576");
  std::string key = c.get_string("key", "id");
  if (key != "id" && key != "none") throw ConfigError("key", "must be 'id' or 'none'");
  s.key_is_id = key == "id";
  s.record.seed = static_cast<uint64_t>(c.get_int("seed", 0));
  s.record.duplicate_ratio = c.get_double("duplicate.ratio", 0.006);
  if (!(s.record.duplicate_ratio >= 0.0 && s.record.duplicate_ratio < 1.0))
    throw ConfigError("duplicate.ratio", "must be >= 0 and < 1");
  int64_t partitions = c.get_int("partitions", 1);
  if (partitions < 1 || partitions > 65536)
    throw ConfigError("partitions", "must be between 1 and 65536");
  s.record.partitions = static_cast<uint32_t>(partitions);
  int64_t payload = c.get_size("payload.bytes", 100);
  if (payload < 0 || payload > (1 << 20))
    throw ConfigError("payload.bytes", "must be between 0 and 1MiB");
  s.record.payload_bytes = static_cast<size_t>(payload);
  return s;
}

GeneratorSource::GeneratorSource(sdk::Host host, const sdk::Config& config)
    : host_(host), s_(Settings::from(config)), maker_(s_.record),
      next_(s_.record.partitions, 0) {
  limiter_.set_rate(s_.rate);
}

Status GeneratorSource::validate(const sdk::Config& config) {
  Settings::from(config);
  return Status::ok();
}

Status GeneratorSource::open(const std::optional<sdk::Checkpoint>& resume) {
  std::fill(next_.begin(), next_.end(), 0);
  // Without stored positions the generator starts over: its output is recomputable, so
  // it keeps no store of its own.
  if (resume) return load_positions(*resume);
  return Status::ok();
}

Status GeneratorSource::load_positions(const sdk::Checkpoint& cp) {
  if (cp.format != kCheckpointFormat)
    return Status::error(EX_ERR_CONFIG, "positions have format '" + cp.format +
                                            "', the generator reads '" + kCheckpointFormat +
                                            "': they were stored by another source");
  std::vector<uint64_t> parsed;
  const char* p = cp.data.data();
  const char* end = p + cp.data.size();
  while (p < end) {
    uint64_t v = 0;
    auto [q, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || (q != end && *q != ','))
      return Status::fatal("corrupt generator.v1 positions: '" + cp.data + "'");
    parsed.push_back(v);
    p = q == end ? q : q + 1;
  }
  if (parsed.size() != next_.size())
    return Status::error(EX_ERR_CONFIG,
                         "positions cover " + std::to_string(parsed.size()) +
                             " partitions but partitions is " + std::to_string(next_.size()) +
                             ": changing the partition count changes every record's position",
                         "partitions");
  next_ = std::move(parsed);
  return Status::ok();
}

uint64_t GeneratorSource::partition_size(uint32_t p) const {
  if (s_.count == 0) return UINT64_MAX;
  auto count = static_cast<uint64_t>(s_.count);
  uint32_t n = s_.record.partitions;
  return count > p ? (count - p - 1) / n + 1 : 0;
}

uint64_t GeneratorSource::lowest_pending() const {
  uint64_t best = UINT64_MAX;
  uint32_t n = s_.record.partitions;
  for (uint32_t p = 0; p < n; ++p)
    if (next_[p] < partition_size(p)) best = std::min(best, next_[p] * n + p);
  return best;
}

Status GeneratorSource::announce() {
  std::vector<sdk::Partition> parts;
  parts.reserve(next_.size());
  for (uint32_t p = 0; p < next_.size(); ++p) {
    sdk::Partition part;
    part.id = static_cast<int32_t>(p);
    part.name = "generator-" + std::to_string(p);
    part.topic = "generator";
    part.number = static_cast<int32_t>(p);
    part.start_offset = static_cast<int64_t>(next_[p]);
    parts.push_back(std::move(part));
  }
  return host_.assigned(parts);
}

Status GeneratorSource::poll(int timeout_ms, std::vector<ex_record>& out, bool& end_of_input) {
  if (!announced_) {
    Status st = announce();
    if (!st) return st;
    announced_ = true;
  }
  uint64_t index = lowest_pending();
  if (index == UINT64_MAX) {
    end_of_input = true;
    return Status::ok();
  }
  uint64_t budget = limiter_.take(static_cast<uint64_t>(s_.batch_size), timeout_ms);
  if (budget == 0) return Status::ok();

  size_t max_len = maker_.max_value_size();
  if (arena_.size() < budget * max_len) arena_.resize(budget * max_len);
  out.reserve(budget);
  char* base = arena_.data();
  size_t used = 0;
  uint32_t n = s_.record.partitions;
  uint64_t duplicates = 0;
  while (out.size() < budget && index != UINT64_MAX) {
    auto p = static_cast<uint32_t>(index % n);
    uint64_t offset = index / n;
    if (next_[p] != offset || offset >= partition_size(p)) {
      // Positions out of step (resumed from arbitrary offsets) or a drained partition:
      // find the true next record. In the common case this branch is rare.
      index = lowest_pending();
      continue;
    }
    uint64_t origin = maker_.origin_of(index);
    duplicates += origin != index;
    char* v = base + used;
    size_t len = maker_.write_value(origin, v);
    used += len;
    ex_record r{};
    r.value = ex_bytes{reinterpret_cast<const uint8_t*>(v), len};
    r.key = s_.key_is_id ? ex_bytes{reinterpret_cast<const uint8_t*>(v + RecordMaker::kIdOffset),
                                    RecordMaker::kIdLength}
                         : sdk::null_bytes();
    r.partition = static_cast<int32_t>(p);
    r.offset = static_cast<int64_t>(offset);
    r.timestamp_ms = -1;
    out.push_back(r);
    next_[p] = offset + 1;
    ++index;
  }
  host_.counter("generator_records_total", static_cast<double>(out.size()));
  if (duplicates != 0) host_.counter("generator_duplicates_total", static_cast<double>(duplicates));
  return Status::ok();
}

Status GeneratorSource::checkpoint(sdk::Checkpoint& out) { return encode(next_, out); }

Status GeneratorSource::checkpoint_at(const std::vector<sdk::Partition>& parts, sdk::Checkpoint& out) {
  std::vector<uint64_t> at = next_;
  for (const auto& x : parts)
    if (x.id >= 0 && static_cast<size_t>(x.id) < at.size() && x.start_offset >= 0)
      at[static_cast<size_t>(x.id)] = std::min(at[static_cast<size_t>(x.id)], static_cast<uint64_t>(x.start_offset));
  return encode(at, out);
}

Status GeneratorSource::encode(const std::vector<uint64_t>& next, sdk::Checkpoint& out) {
  out.format = kCheckpointFormat;
  out.data.clear();
  char buf[24];
  for (size_t p = 0; p < next.size(); ++p) {
    if (p != 0) out.data.push_back(',');
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), next[p]);
    out.data.append(buf, end);
  }
  return Status::ok();
}

Status GeneratorSource::rewind(const sdk::Checkpoint& positions) {
  return load_positions(positions);
}

Status GeneratorSource::reconfigure(const sdk::Config& config) {
  Settings next = Settings::from(config);
  // Only knobs that do not change which bytes sit at which position apply in place.
  const RecordParams& a = s_.record;
  const RecordParams& b = next.record;
  if (next.count != s_.count || next.key_is_id != s_.key_is_id || a.seed != b.seed ||
      a.duplicate_ratio != b.duplicate_ratio || a.partitions != b.partitions ||
      a.payload_bytes != b.payload_bytes)
    return Status::unsupported("only rate and batch.size change in place");
  s_.rate = next.rate;
  s_.batch_size = next.batch_size;
  limiter_.set_rate(s_.rate);
  return Status::ok();
}

}  // namespace exactly::generator
