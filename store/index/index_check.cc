// PrefixIndex::CheckInvariants: every structural rule, checked from scratch.
#include <string>

#include "store/index/index.h"

namespace strata {

namespace {

Status Broken(const PrefixKey& key, const std::string& what) {
  return Status::Internal("index record " + key.ToFileStem() + ": " + what);
}

}  // namespace

Status PrefixIndex::CheckNode(uint32_t idx) const {
  const Node& n = nodes_[idx];
  if (FindNode(n.key) != idx) return Broken(n.key, "not found through the key hash");
  bool in_bucket_chain = false;
  for (uint32_t i = bucket_heads_[BucketSlot(n.bucket)]; i != kNil; i = nodes_[i].next_in_bucket) {
    in_bucket_chain |= i == idx;
  }
  if (!in_bucket_chain) return Broken(n.key, "missing from its bucket chain");
  if (n.bucket_tag != BucketTag(n.bucket)) return Broken(n.key, "bucket tag is stale");
  if (n.key.consumed == 0) return Broken(n.key, "consumes no tokens");
  if (n.parent() != kNil) {
    const Node& p = nodes_[n.parent()];
    if ((p.flags & kLive) == 0) return Broken(n.key, "parent is not live");
    if (p.key.consumed >= n.key.consumed) return Broken(n.key, "parent is not shorter");
    if (p.last_use_ms < n.last_use_ms) return Broken(n.key, "parent older than child");
  }
  for (size_t i = 1; i < kAncestorWindow; ++i) {
    uint32_t above = n.ancestors[i - 1];
    if (n.ancestors[i] != (above == kNil ? kNil : nodes_[above].parent())) {
      return Broken(n.key, "ancestor window does not follow its parents");
    }
  }
  if (n.tail_pages != TailPages(n.key.consumed, n.parent())) {
    return Broken(n.key, "tail page count does not match its parent");
  }
  uint32_t children = 0;
  for (uint32_t c = n.first_child; c != kNil; c = nodes_[c].next_sibling) {
    if ((nodes_[c].flags & kLive) == 0 || nodes_[c].parent() != idx) {
      return Broken(n.key, "child list holds a record that is not its child");
    }
    if (++children > live_count_) return Broken(n.key, "child list loops");
  }
  if (children != n.child_count) return Broken(n.key, "child count does not match its children");
  bool leaf = n.child_count == 0;
  bool compactable = n.child_count == 1 && n.has_row();
  auto listed = [&](const std::map<uint64_t, uint32_t>& set) {
    auto it = set.find(n.tick);
    return it != set.end() && it->second == idx;
  };
  if (leaf != ((n.flags & kInLeaves) != 0) || leaf != listed(leaves_)) {
    return Broken(n.key, "leaf list membership is wrong");
  }
  if (compactable != ((n.flags & kInCompactable) != 0) || compactable != listed(compactable_)) {
    return Broken(n.key, "compaction list membership is wrong");
  }
  if ((n.flags & kRowDropPending) != 0 &&
      (n.pins == 0 || n.child_count != 1 || !n.has_row() || n.parent() == kNil)) {
    return Broken(n.key, "row drop pending without a pinned single-child non-root record");
  }
  if (n.tick == 0 || n.tick > clock_) return Broken(n.key, "access tick out of range");
  return Status::Ok();
}

Status PrefixIndex::CheckInvariants() const {
  if (bucket_heads_.size() != key_heads_.size() * kBucketHeadsPerKeyHead ||
      (key_heads_.size() & (key_heads_.size() - 1)) != 0) {
    return Status::Internal("index hash heads are not powers of two grown together");
  }
  size_t live = 0;
  for (uint32_t idx = 0; idx < nodes_.size(); ++idx) {
    if ((nodes_[idx].flags & kLive) == 0) continue;
    ++live;
    STRATA_RETURN_IF_ERROR(CheckNode(idx));
  }
  if (live != live_count_) return Status::Internal("index live count is wrong");
  size_t free_nodes = 0;
  for (uint32_t i = free_head_; i != kNil; i = nodes_[i].next_in_key) {
    if ((nodes_[i].flags & kLive) != 0)
      return Status::Internal("a live record is on the free list");
    if (++free_nodes > nodes_.size()) return Status::Internal("index free list loops");
  }
  if (live + free_nodes != nodes_.size()) return Status::Internal("index storage leaks nodes");
  size_t leaves = 0;
  size_t compactable = 0;
  for (uint32_t idx = 0; idx < nodes_.size(); ++idx) {
    leaves += (nodes_[idx].flags & kInLeaves) != 0;
    compactable += (nodes_[idx].flags & kInCompactable) != 0;
  }
  if (leaves != leaves_.size() || compactable != compactable_.size()) {
    return Status::Internal("index LRU lists hold records that are not listed");
  }
  return Status::Ok();
}

}  // namespace strata
