// PrefixIndex::Lookup (seed 2.3). The probe count is about the tokens past the
// deepest record divided by 64, plus one hash of at most 64 tokens per
// distinct candidate endpoint; the chain walk follows parent links only.
// Probes and the chain walk prefetch ahead, so a large index that is not in
// cache costs overlapped misses rather than one miss after another.
#include <algorithm>

#include "store/index/index.h"

namespace strata {

namespace {
// Buckets whose hash heads and first records are loaded together.
constexpr uint64_t kProbeBatch = 8;
}  // namespace

bool PrefixIndex::Feasible(uint32_t candidate, uint64_t resident, StateSet restorable,
                           LookupHit& hit) const {
  hit.chain.clear();
  uint32_t idx = candidate;
  while (idx != kNil && nodes_[idx].key.consumed > resident) {
    const Node& n = nodes_[idx];
    PrefetchAncestors(n);
    if (!restorable.contains(n.state)) return false;
    hit.chain.push_back(ChainLink{n.key, n.location, n.state,
                                  n.has_row() ? RowPresence::kPresent : RowPresence::kPageOnly,
                                  n.tail_pages});
    idx = n.parent();
  }
  std::reverse(hit.chain.begin(), hit.chain.end());
  hit.base_consumed = idx == kNil ? 0 : nodes_[idx].key.consumed;
  hit.skip_pages =
      static_cast<uint32_t>(resident / page_tokens_ - hit.base_consumed / page_tokens_);
  return true;
}

bool PrefixIndex::ProbeBucket(const PrefixHistory& history, uint64_t block, uint64_t resident,
                              uint64_t top, StateSet restorable, LookupHit& hit) const {
  const Digest128& bucket = history.aligned_digest(block);
  const uint32_t head = bucket_heads_[BucketSlot(bucket)];
  const uint32_t tag = BucketTag(bucket);
  // Reads only a record's first cache line. A record of another bucket with
  // the same tag and block cannot carry this history's key at its endpoint
  // (that key would put it in this bucket), so the key check below settles it.
  auto qualifies = [&](const Node& n, uint64_t bound) {
    return n.bucket_tag == tag && n.key.consumed / PrefixHistory::kBlockTokens == block &&
           n.key.consumed > resident && n.key.consumed <= bound && n.has_row() &&
           restorable.contains(n.state);
  };
  // Distinct endpoints in this block, deepest first. At most one record per
  // endpoint can carry this history's key there.
  uint64_t bound = top;
  for (;;) {
    uint64_t deepest = 0;
    for (uint32_t i = head; i != kNil; i = nodes_[i].next_in_bucket) {
      if (qualifies(nodes_[i], bound)) deepest = std::max(deepest, nodes_[i].key.consumed);
    }
    if (deepest == 0) return false;
    const PrefixKey key = history.key_at(deepest);
    for (uint32_t i = head; i != kNil; i = nodes_[i].next_in_bucket) {
      if (nodes_[i].key == key && qualifies(nodes_[i], bound)) {
        if (Feasible(i, resident, restorable, hit)) return true;
        break;
      }
    }
    bound = deepest - 1;
  }
}

void PrefixIndex::PrefetchBuckets(const PrefixHistory& history, uint64_t high, uint64_t low) const {
  size_t slots[kProbeBatch];
  size_t count = 0;
  for (uint64_t block = high;; --block) {
    slots[count] = BucketSlot(history.aligned_digest(block));
    __builtin_prefetch(&bucket_heads_[slots[count]]);
    ++count;
    if (block == low) break;
  }
  for (size_t i = 0; i < count; ++i) {
    uint32_t head = bucket_heads_[slots[i]];
    if (head != kNil) __builtin_prefetch(&nodes_[head]);
  }
}

std::optional<LookupHit> PrefixIndex::Lookup(const PrefixHistory& history,
                                             uint64_t resident_consumed, uint64_t max_consumed,
                                             StateSet restorable) const {
  const uint64_t top = std::min(max_consumed, history.size());
  if (top <= resident_consumed) return std::nullopt;
  const uint64_t lowest = resident_consumed / PrefixHistory::kBlockTokens;
  LookupHit hit;
  for (uint64_t block = top / PrefixHistory::kBlockTokens;; --block) {
    if ((top / PrefixHistory::kBlockTokens - block) % kProbeBatch == 0) {
      PrefetchBuckets(history, block, std::max(lowest, block - std::min(block, kProbeBatch - 1)));
    }
    if (ProbeBucket(history, block, resident_consumed, top, restorable, hit)) return hit;
    if (block == lowest) break;
  }
  return std::nullopt;
}

}  // namespace strata
