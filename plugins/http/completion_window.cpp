#include "completion_window.hpp"

#include <algorithm>

namespace exactly::http {

CompletionWindow::Entry& CompletionWindow::add(const ex_record& r) {
  size_t id = next_id_++;
  Entry& e = entries_[id];
  if (r.key.ptr != nullptr) e.key = std::string(sdk::view(r.key));
  e.value = std::string(sdk::view(r.value));
  e.bytes = e.value.size() + (e.key ? e.key->size() : 0);
  for (uint32_t h = 0; h < r.header_count; ++h) {
    e.headers.emplace_back(std::string(sdk::view(r.headers[h].key)),
                           std::string(sdk::view(r.headers[h].value)));
    e.bytes += e.headers.back().first.size() + e.headers.back().second.size();
  }
  for (auto& [k, v] : e.headers) e.header_views.push_back(ex_header{sdk::bytes(k), sdk::bytes(v)});
  e.record = r;
  e.record.key = e.key ? sdk::bytes(*e.key) : ex_bytes{nullptr, 0};
  // An absent value stays absent in the dead-letter copy; an empty one stays empty.
  e.record.value = r.value.ptr == nullptr ? ex_bytes{nullptr, 0}
                                          : ex_bytes{reinterpret_cast<const uint8_t*>(e.value.data()), e.value.size()};
  e.record.headers = e.header_views.empty() ? nullptr : e.header_views.data();
  e.record.header_count = static_cast<uint32_t>(e.header_views.size());
  e.req.index = id;
  e.req.partition = r.partition;
  open_[r.partition].insert(r.offset);
  open_bytes_ += e.bytes;
  return e;
}

void CompletionWindow::finished(const Request& r) {
  auto it = entries_.find(r.index);
  if (it == entries_.end()) return;
  if (r.delivered) {
    erase(r.index);
    return;
  }
  if (it->second.failed) return;
  it->second.failed = true;
  open_bytes_ -= it->second.bytes;
  failed_.push_back(r.index);
}

void CompletionWindow::erase(size_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  const ex_record& r = it->second.record;
  auto p = open_.find(r.partition);
  if (p != open_.end()) {
    if (auto o = p->second.find(r.offset); o != p->second.end()) p->second.erase(o);
    if (p->second.empty()) open_.erase(p);
  }
  if (!it->second.failed) open_bytes_ -= it->second.bytes;
  entries_.erase(it);
}

size_t CompletionWindow::report_failures(const sdk::RecordErrors& errors, const Offer& offer,
                                         sdk::Status& st) {
  std::vector<size_t> ids;
  ids.swap(failed_);
  size_t rejected = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    auto it = entries_.find(ids[k]);
    if (it == entries_.end()) continue;
    if (!offer || !offer(it->second, st)) {
      if (!st) {
        failed_.assign(ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end());
        return rejected;
      }
      if (!errors.reject_record(it->second.record, it->second.req.reason))
        throw sdk::StatusError(sdk::Status::fatal("the host did not take a record error"));
      ++rejected;
    }
    erase(ids[k]);
  }
  return rejected;
}

void CompletionWindow::lower(std::vector<sdk::Partition>& parts) const {
  for (auto& x : parts) {
    auto p = open_.find(x.id);
    if (p != open_.end() && !p->second.empty())
      x.start_offset = std::min(x.start_offset, *p->second.begin());
  }
}

void CompletionWindow::forget_partitions(const std::set<int32_t>& ids) {
  std::vector<size_t> gone;
  for (auto& [id, e] : entries_)
    if (ids.count(e.record.partition) != 0) gone.push_back(id);
  for (size_t id : gone) erase(id);
  std::erase_if(failed_, [&](size_t id) { return entries_.count(id) == 0; });
}

void CompletionWindow::clear() {
  entries_.clear();
  open_.clear();
  failed_.clear();
  open_bytes_ = 0;
}

}  // namespace exactly::http
