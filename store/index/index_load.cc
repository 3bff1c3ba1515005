// PrefixIndex::LoadCommitted: the startup rebuild from committed records.
#include <algorithm>

#include "store/index/index.h"

namespace strata {

namespace {

// The reason a committed record cannot be indexed, or OK.
Status CheckCommitted(const CommittedRecord& r, uint32_t page_tokens) {
  const PrefixKey& key = r.key;
  if (key.consumed == 0) return Status::InvalidArgument("record consumes no tokens");
  uint64_t base = 0;
  if (r.parent) {
    if (r.parent->consumed >= key.consumed) {
      return Status::InvalidArgument("parent " + r.parent->ToFileStem() + " is not shorter");
    }
    base = r.parent->consumed;
  }
  uint64_t expected = key.consumed / page_tokens - base / page_tokens;
  if (r.tail_page_count != expected) {
    return Status::InvalidArgument("tail page count " + std::to_string(r.tail_page_count) +
                                   " does not match the keys (expected " +
                                   std::to_string(expected) + ")");
  }
  return Status::Ok();
}

}  // namespace

Result<LoadReport> PrefixIndex::LoadCommitted(std::vector<CommittedRecord> records) {
  if (live_count_ != 0) {
    return Status::FailedPrecondition("committed records load only into an empty index");
  }
  if (records.size() >= kNil - 1) {
    return Status::FailedPrecondition("too many committed records: " +
                                      std::to_string(records.size()));
  }
  // Fresh storage (reserved capacity kept), so node indices follow the load
  // order.
  nodes_.clear();
  free_head_ = kNil;
  std::fill(key_heads_.begin(), key_heads_.end(), kNil);
  std::fill(bucket_heads_.begin(), bucket_heads_.end(), kNil);
  leaves_.clear();
  compactable_.clear();
  clock_ = 0;
  last_sweep_ms_.reset();
  LoadReport report;
  // A parent is shorter than its child, so ascending consumed order links
  // every parent before its children.
  std::sort(records.begin(), records.end(),
            [](const CommittedRecord& a, const CommittedRecord& b) { return a.key < b.key; });
  std::vector<uint64_t> own_last_use;  // by node index, before propagation
  for (size_t i = 0; i < records.size(); ++i) {
    const CommittedRecord& r = records[i];
    if (Status s = CheckCommitted(r, page_tokens_); !s.ok()) {
      report.rejected.push_back({r.key, std::move(s)});
      continue;
    }
    if (i > 0 && records[i - 1].key == r.key) {
      report.rejected.push_back({r.key, Status::AlreadyExists("duplicate record")});
      continue;
    }
    uint32_t parent = r.parent ? FindNode(*r.parent) : kNil;
    if (r.parent && parent == kNil) {
      report.orphans.push_back(r.key);
      continue;
    }
    uint32_t idx = AllocateNode();
    Node& n = nodes_[idx];
    n.key = r.key;
    n.bucket = r.bucket_digest;
    n.bucket_tag = BucketTag(r.bucket_digest);
    n.location = r.location;
    n.state = TransferState::kReady;
    n.flags = kLive | (r.row == RowPresence::kPresent ? kHasRow : 0);
    n.tail_pages = r.tail_page_count;
    n.last_use_ms = r.last_use_ms;
    n.tick = ++clock_;  // provisional; reordered below
    LinkHashes(idx);
    AttachToParent(idx, parent);
    List(idx);
    own_last_use.push_back(r.last_use_ms);  // idx == own_last_use.size() here
  }
  // Startup pruning: childless page-only records, and the page-only
  // ancestors they leave childless.
  const Predicate any = [](const IndexEntry&) { return true; };
  for (uint32_t idx = 0; idx < nodes_.size(); ++idx) {
    const Node& n = nodes_[idx];
    if ((n.flags & kLive) != 0 && n.child_count == 0 && !n.has_row()) {
      RemoveWithPageOnlyAncestors(idx, any, report.pruned);
    }
  }
  // Access order from each record's own last use (older first, then shorter).
  std::vector<uint32_t> order;
  order.reserve(live_count_);
  for (uint32_t idx = 0; idx < nodes_.size(); ++idx) {
    if ((nodes_[idx].flags & kLive) != 0) order.push_back(idx);
  }
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (own_last_use[a] != own_last_use[b]) return own_last_use[a] < own_last_use[b];
    return nodes_[a].key < nodes_[b].key;
  });
  for (uint32_t idx : order) {
    Unlist(idx);
    nodes_[idx].tick = ++clock_;
    List(idx);
  }
  // A parent is at least as fresh as its children. Parents have smaller
  // indices than their children, so one pass from the back pushes it up.
  for (auto idx = static_cast<uint32_t>(nodes_.size()); idx-- > 0;) {
    uint32_t parent = nodes_[idx].parent();
    if ((nodes_[idx].flags & kLive) != 0 && parent != kNil) {
      nodes_[parent].last_use_ms = std::max(nodes_[parent].last_use_ms, nodes_[idx].last_use_ms);
    }
  }
  return report;
}

}  // namespace strata
