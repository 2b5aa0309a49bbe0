// The sink's ordered completion window: every record written and not yet final, with its
// request, across write() calls. Requests finish out of order; a partition's committed
// position may only reach its lowest incomplete record, so the window keeps, per input
// partition, the offsets still open. A record that failed for good stays open until the
// host has taken its record error (its dead letter is written in the round that moves
// the position past it). The window owns a copy of each record: the request body and
// the dead-letter copy outlive the batch.
#pragma once

#include <exactly/sdk.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "request.hpp"

namespace exactly::http {

class CompletionWindow {
 public:
  struct Entry {
    Request req;
    std::optional<std::string> key;
    std::string value;
    std::vector<std::pair<std::string, std::string>> headers;
    std::vector<ex_header> header_views;
    ex_record record{};  // views into the strings above
    size_t bytes = 0;
    bool failed = false;  // final and failed, waiting for report_failures (not open bytes)
  };

  // A copy of `r`, open until delivered() or taken by report_failures(); its request's
  // `index` is the entry's id.
  Entry& add(const ex_record& r);
  // The request is final: delivered (forgotten) or failed (kept until reported).
  void finished(const Request& r);
  // Forgets a record that never became a request (a record error found in write()).
  void forget(size_t id) { erase(id); }
  // May take a failed record elsewhere (the retry topic): true when it did; false with
  // `st` still ok for a record error; `st` not ok when it failed as a whole.
  using Offer = std::function<bool(Entry&, sdk::Status& st)>;
  // Offers every failed record to `offer` (when set): one it takes is complete, the others
  // go to the error policy; either way they are forgotten. Returns how many went to the
  // error policy. Stops at the first failed offer with `st` set, keeping the failures not
  // yet handled (the round is replayed).
  size_t report_failures(const sdk::RecordErrors& errors, const Offer& offer, sdk::Status& st);
  // Lowers each partition's start_offset to its lowest open record.
  void lower(std::vector<sdk::Partition>& parts) const;
  // Forgets the records of `ids` (or all): their requests must be dropped first.
  void forget_partitions(const std::set<int32_t>& ids);
  void clear();

  size_t open_records() const { return entries_.size() - failed_.size(); }
  size_t open_bytes() const { return open_bytes_; }
  size_t failed() const { return failed_.size(); }

 private:
  void erase(size_t id);
  std::map<size_t, Entry> entries_;  // by id, node-based: requests keep their address
  std::map<int32_t, std::multiset<int64_t>> open_;  // partition -> offsets not reported
  std::vector<size_t> failed_;
  size_t next_id_ = 0;
  size_t open_bytes_ = 0;
};

}  // namespace exactly::http
