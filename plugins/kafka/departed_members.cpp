#include "departed_members.hpp"

#include <map>
#include <mutex>

namespace exactly::kafka::departed {
namespace {

struct Entry {
  unsigned long id;
  std::string txn_id;
  Listener fn;
};

struct Registry {
  std::mutex mu;
  unsigned long next = 1;
  std::multimap<std::string, Entry> subs;  // equal keys keep insertion order
};

Registry& registry() {
  static Registry r;  // lives as long as the plugin library
  return r;
}

}  // namespace

Subscription::Subscription(const std::string& pipeline, const std::string& txn_id, Listener fn)
    : pipeline_(pipeline) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  id_ = r.next++;
  r.subs.emplace(pipeline, Entry{id_, txn_id, std::move(fn)});
}

Subscription::~Subscription() {
  if (id_ == 0) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto [b, e] = r.subs.equal_range(pipeline_);
  for (auto it = b; it != e; ++it)
    if (it->second.id == id_) {
      r.subs.erase(it);
      break;
    }
}

std::string advertised_id(const std::string& pipeline) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.subs.find(pipeline);
  return it == r.subs.end() ? std::string() : it->second.txn_id;
}

int announce(const std::string& pipeline, const std::string& client_id) {
  // Under the lock: a subscription being destroyed waits until no call into it runs.
  // Listeners only queue work (they never call back into the registry).
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  int n = 0;
  auto [b, e] = r.subs.equal_range(pipeline);
  for (auto it = b; it != e; ++it, ++n) it->second.fn(client_id);
  return n;
}

}  // namespace exactly::kafka::departed
