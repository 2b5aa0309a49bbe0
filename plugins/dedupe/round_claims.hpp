// An in-memory table of claims: id -> (seq, owner offset, fingerprint). Holds the claims
// not yet folded into the store's files, the running round's included (a
// duplicate later in the same batch or round must see them; an abort takes them out
// again, see claim() and truncate()). Open addressing over one key arena.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "huge_pages.hpp"

namespace exactly::dedupe {

class RoundClaims {
 public:
  struct Claim {
    uint64_t hash;
    uint64_t seq;
    int64_t offset;
    uint64_t fingerprint;
    // Where the key lives in the arena: 47 bits of position, so an arena past 4 GiB
    // (ids near `id.max.bytes`'s 65536 in a fill of a few million) does not wrap, in the
    // same 8 bytes as two 32-bit fields (the claim stays 40 bytes); 17 bits of length
    // hold every key (65537 bytes at most: 65536 of id and the byte a long id gets).
    uint64_t key_pos : 47;
    uint64_t key_len : 17;
  };

  RoundClaims() { slots_.assign_zeros(1024); }

  Claim* find(std::string_view key, uint64_t hash) {
    return const_cast<Claim*>(static_cast<const RoundClaims*>(this)->find(key, hash));
  }
  const Claim* find(std::string_view key, uint64_t hash) const {
    const uint64_t s = slots_[probe(key, hash)];
    return s == 0 ? nullptr : &claims_[static_cast<uint32_t>(s) - 1];
  }

  // Starts loading the slot a find(…, hash) probes first: callers run a few records ahead
  // so that the probe finds it in cache (the tables outgrow the caches).
  [[gnu::always_inline]] void prefetch(uint64_t hash) const {
    __builtin_prefetch(&slots_[hash & (slots_.size() - 1)]);
  }

  // Adds the claim of `key`, or replaces it if there is one (an evicted id claimed again;
  // restores and reloads, which never undo): claim() without keeping the old one.
  void upsert(std::string_view key, uint64_t hash, uint64_t seq, int64_t offset, uint64_t fp) {
    Claim old;
    bool replaced;
    claim(key, hash, seq, offset, fp, &old, &replaced);
  }

  // Claims `key` for a round in one probe (with no deletions, a missing key's first empty
  // slot is where it belongs). When it replaces a claim (an evicted id claimed again) the
  // old one is copied to `*replaced`, so that an abort can put it back. Returns the
  // claim's 1-based index.
  uint32_t claim(std::string_view key, uint64_t hash, uint64_t seq, int64_t offset, uint64_t fp,
                 Claim* replaced, bool* was_replaced) {
    if (over_load(claims_.size() + 1, slots_.size())) grow();
    const size_t i = probe(key, hash);
    if (slots_[i] == 0) {
      append(key, hash, seq, offset, fp);
      slots_[i] = tag_of(hash) | static_cast<uint32_t>(claims_.size());
      *was_replaced = false;
      return static_cast<uint32_t>(claims_.size());
    }
    const uint32_t index1 = static_cast<uint32_t>(slots_[i]);
    Claim& c = claims_[index1 - 1];
    *replaced = c;
    *was_replaced = true;
    c.seq = seq;
    c.offset = offset;
    c.fingerprint = fp;
    return index1;
  }
  // Puts back a claim that claim() replaced.
  void put_back(uint32_t index1, const Claim& old) { claims_[index1 - 1] = old; }
  // Forgets every claim after the first `keep` and every key byte after `key_bytes`: an
  // aborted round's. Without deletions, taking a linear-probing table's newest entries
  // out newest first leaves it as it was before they came (no older entry's probe ever
  // ran past a slot that was free when it was placed); a rehash places the claims in
  // index order, which keeps that true.
  void truncate(size_t keep, size_t key_bytes) {
    for (size_t n = claims_.size(); n > keep; --n) {
      const Claim& c = claims_[n - 1];
      const size_t i = probe(key_of(c), c.hash);
      if (static_cast<uint32_t>(slots_[i]) == n) slots_[i] = 0;
    }
    claims_.shrink_to(keep);
    arena_.shrink_to(key_bytes);
  }
  // Room for n more claims with `key_bytes` more key bytes, so that claims made meanwhile
  // move neither the claims nor the slots (callers hold Claim pointers across them).
  void reserve_more(size_t n, size_t key_bytes) {
    claims_.reserve(claims_.size() + n);
    arena_.reserve(arena_.size() + key_bytes);
    const size_t want = slots_for(claims_.size() + n);
    if (want > slots_.size()) rehash(want);
  }
  const Claim& at(uint32_t index1) const { return claims_[index1 - 1]; }

  // Keeps the memory for the next fill: the tables refill to about the same size round
  // after round (or fold after fold), and memory given back came back as fresh pages the
  // kernel had to zero (a profile of the pipeline thread showed a fifth of its time
  // there). A burst is given back once several fills in a row used little of it.
  void clear() {
    if (claims_.empty()) return;
    if (claims_.size() * 16 >= slots_.size()) small_fills_ = 0;
    else if (++small_fills_ >= kSmallFillsBeforeShrink) {
      small_fills_ = 0;
      claims_.release();
      arena_.release();
      slots_.release();
      slots_.assign_zeros(1024);
      return;
    }
    claims_.clear();
    arena_.clear();
    slots_.assign_zeros(slots_.size());
  }

  // Room for `n` claims of about `key_bytes` each without growing (a growth rehashes
  // every claim and copies the arrays).
  void reserve(size_t n, size_t key_bytes) {
    reserve_entries(n, key_bytes);
    if (slots_for(n) > slots_.size()) rehash(slots_for(n));
  }
  size_t key_bytes() const { return arena_.size(); }
  size_t capacity() const { return claims_.capacity(); }
  // Room for n claims in the claim and key arrays only (no rehash); see adopt_slots.
  void reserve_entries(size_t n, size_t key_bytes) {
    claims_.reserve_exact(n);
    arena_.reserve_exact(n * key_bytes);
  }
  // Slot count that holds n claims without growing.
  static size_t slots_for(size_t n) {
    size_t slots = 1024;
    while (over_load(n, slots)) slots *= 2;
    return slots;
  }
  // Takes a zeroed slot array made (and faulted in) elsewhere and rehashes into it, if
  // it is larger than the current one.
  void adopt_slots(MappedArray<uint64_t>&& slots) {
    if (slots.size() <= slots_.size() || (slots.size() & (slots.size() - 1)) != 0) return;
    slots_ = std::move(slots);
    place_all();
  }
  // The mapped ranges of the table's arrays (see populate_range).
  std::vector<std::pair<void*, size_t>> ranges() const {
    return {slots_.range(), claims_.range(), arena_.range()};
  }

  bool empty() const { return claims_.empty(); }
  size_t size() const { return claims_.size(); }
  const MappedArray<Claim>& claims() const { return claims_; }
  const char* arena_data() const { return arena_.data(); }
  std::string_view key_of(const Claim& c) const {
    return std::string_view(arena_.data() + c.key_pos, c.key_len);
  }

 private:
  // A slot: the claim's 1-based index in the low 32 bits, the hash's top 32 bits above.
  static constexpr uint64_t kTagMask = ~uint64_t{0xffffffff};
  static uint64_t tag_of(uint64_t hash) { return hash & kTagMask; }

  // A table is filled to 3/4 of its slots before it doubles (it was 1/2). The slot
  // array of a partition's first fill is faulted in whole for the fold threshold, and
  // every fresh page costs the kernel's zeroing (in a 2M-record run the page zeroing was
  // a fifth of the process's CPU): at 1/2 the default threshold (1.4M claims) needed 4M
  // slots, 32 MB a partition; at 3/4 it fits 2M slots, 16 MB, with room for a fill that
  // overshoots the threshold by 1/8. The tag keeps the longer probes of a fuller table
  // (a miss reads ~8 slots at 3/4, ~2.5 at 1/2, in one or two cache lines) out of the
  // claims.
  static bool over_load(size_t claims, size_t slots) { return claims * 4 > slots * 3; }

  // The slot holding `key`, or the first empty one where its probe ends.
  size_t probe(std::string_view key, uint64_t hash) const {
    const size_t mask = slots_.size() - 1;
    const uint64_t tag = tag_of(hash);
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const uint64_t s = slots_[i];
      if (s == 0) return i;
      // Most lookups are of new ids: the tag turns a probe of an occupied slot away
      // without a cache miss in claims_.
      if ((s & kTagMask) != tag) continue;
      const Claim& c = claims_[static_cast<uint32_t>(s) - 1];
      if (c.hash == hash && key_of(c) == key) return i;
    }
  }
  void place(uint32_t index1) {
    size_t mask = slots_.size() - 1;
    const uint64_t hash = claims_[index1 - 1].hash;
    for (size_t i = hash & mask;; i = (i + 1) & mask)
      if (slots_[i] == 0) {
        slots_[i] = tag_of(hash) | index1;
        return;
      }
  }
  void append(std::string_view key, uint64_t hash, uint64_t seq, int64_t offset, uint64_t fp) {
    Claim c{hash, seq, offset, fp, arena_.size(), key.size()};
    arena_.append(key.data(), key.size());
    claims_.push_back(c);
  }
  void grow() { rehash(slots_.size() * 2); }
  void rehash(size_t slots) {
    slots_.assign_zeros(slots);
    place_all();
  }
  // A rehash writes every claim into a random slot of a table larger than the caches:
  // the slots of the claims a few places ahead start loading first (the claims
  // themselves are read in order).
  void place_all() {
    constexpr uint32_t kAhead = 16;
    const uint32_t n = static_cast<uint32_t>(claims_.size());
    for (uint32_t i = 0; i < kAhead && i < n; ++i) prefetch(claims_[i].hash);
    for (uint32_t i = 1; i <= n; ++i) {
      if (i - 1 + kAhead < n) prefetch(claims_[i - 1 + kAhead].hash);
      place(i);
    }
  }

  static constexpr int kSmallFillsBeforeShrink = 8;

  MappedArray<char> arena_;
  MappedArray<Claim> claims_;
  int small_fills_ = 0;  // fills in a row that used under 1/16 of the slots
  MappedArray<uint64_t> slots_;  // tag | 1-based index into claims_, 0 = empty
};

// Starts loading a claim and its key, for loops that walk a table in an order of their
// own (a fold, a claims file): both ends of the 40-byte claim, which spans two cache
// lines half of the time. always_inline, as every prefetch helper of this plugin: GCC 12
// took a function or lambda whose only effect is a prefetch for a pure one and dropped
// its calls as dead (tests/plugins/dedupe/prefetch_kept_test.sh).
[[gnu::always_inline]] inline void prefetch_claim_and_key(const RoundClaims::Claim* claim,
                                                          const char* key) {
  const char* c = reinterpret_cast<const char*>(claim);
  __builtin_prefetch(c);
  __builtin_prefetch(c + sizeof(RoundClaims::Claim) - 1);
  __builtin_prefetch(key);
}

}  // namespace exactly::dedupe
