// A brute-force model of PrefixIndex for the randomized test: a map of nodes,
// every question answered by scanning all of them. It shares no code with the
// index; it restates the rules of docs/architecture.md ("The prefix index").
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "store/index/index.h"

namespace strata::index_test {

class ReferenceIndex {
 public:
  explicit ReferenceIndex(uint32_t page_tokens) : pt_(page_tokens) {}

  size_t size() const { return nodes_.size(); }
  std::vector<PrefixKey> Keys() const {
    std::vector<PrefixKey> keys;
    for (const auto& [key, n] : nodes_) keys.push_back(key);
    return keys;
  }

  std::vector<IndexEntry> Entries() const {
    std::vector<IndexEntry> out;
    for (const auto& [key, n] : nodes_) out.push_back(EntryOf(n));
    return out;
  }

  Result<InsertResult> Insert(const NewRecord& r, uint64_t now_ms) {
    if (r.key.consumed == 0) return Status::InvalidArgument("empty");
    if (r.parent && r.parent->consumed >= r.key.consumed) return Status::InvalidArgument("parent");
    InsertResult out;
    if (auto it = nodes_.find(r.key); it != nodes_.end()) {
      out.outcome = InsertOutcome::kAlreadyPresent;
      out.tail_page_count = it->second.tail;
      out.root = !it->second.parent;
      out.state = it->second.state;
      return out;
    }
    std::optional<PrefixKey> parent;
    if (r.parent && nodes_.count(*r.parent) != 0) parent = r.parent;
    Node n;
    n.key = r.key;
    n.parent = parent;
    n.bucket = r.bucket_digest;
    n.location = r.location;
    n.state = r.state;
    n.row = r.row == RowPresence::kPresent;
    n.tail = Tail(r.key.consumed, parent);
    n.tick = ++clock_;
    n.last_use = now_ms;
    if (parent) nodes_.at(*parent).pending = false;
    nodes_[r.key] = n;
    if (parent) Refresh(*parent, now_ms);
    out.tail_page_count = n.tail;
    out.root = !parent;
    out.state = r.state;
    if (r.state == TransferState::kReady) out.parent_row_dropped = PageOnlyRule(r.key);
    return out;
  }

  std::optional<LookupHit> Lookup(const PrefixHistory& h, uint64_t a, uint64_t max_consumed,
                                  StateSet ok) const {
    uint64_t top = std::min(max_consumed, h.size());
    if (top <= a) return std::nullopt;
    std::vector<const Node*> candidates;
    for (const auto& [key, n] : nodes_) {
      if (n.row && ok.contains(n.state) && key.consumed > a && key.consumed <= top) {
        candidates.push_back(&n);
      }
    }
    std::sort(candidates.begin(), candidates.end(),
              [](const Node* x, const Node* y) { return x->key.consumed > y->key.consumed; });
    for (const Node* n : candidates) {
      if (h.key_at(n->key.consumed) != n->key) continue;
      LookupHit hit;
      const Node* cur = n;
      bool feasible = true;
      while (cur != nullptr && cur->key.consumed > a) {
        if (!ok.contains(cur->state)) {
          feasible = false;
          break;
        }
        hit.chain.push_back(ChainLink{cur->key, cur->location, cur->state,
                                      cur->row ? RowPresence::kPresent : RowPresence::kPageOnly,
                                      cur->tail});
        cur = cur->parent ? &nodes_.at(*cur->parent) : nullptr;
      }
      if (!feasible) continue;
      std::reverse(hit.chain.begin(), hit.chain.end());
      hit.base_consumed = cur != nullptr ? cur->key.consumed : 0;
      hit.skip_pages = static_cast<uint32_t>(a / pt_ - hit.base_consumed / pt_);
      return hit;
    }
    return std::nullopt;
  }

  Result<std::optional<RowDrop>> SetState(const PrefixKey& key, TransferState state) {
    auto it = nodes_.find(key);
    if (it == nodes_.end()) return Status::NotFound("absent");
    TransferState before = it->second.state;
    it->second.state = state;
    if (state == TransferState::kReady && before != TransferState::kReady) {
      return PageOnlyRule(key);
    }
    return std::optional<RowDrop>();
  }

  Status Pin(const PrefixKey& key) {
    auto it = nodes_.find(key);
    if (it == nodes_.end()) return Status::NotFound("absent");
    ++it->second.pins;
    return Status::Ok();
  }

  Result<std::optional<RowDrop>> Unpin(const PrefixKey& key) {
    auto it = nodes_.find(key);
    if (it == nodes_.end()) return Status::NotFound("absent");
    Node& n = it->second;
    if (n.pins == 0) return Status::FailedPrecondition("not pinned");
    if (--n.pins == 0 && n.pending) return std::optional(DropRow(n));
    return std::optional<RowDrop>();
  }

  Status Touch(const PrefixKey& key, uint64_t now_ms) {
    auto it = nodes_.find(key);
    if (it == nodes_.end()) return Status::NotFound("absent");
    it->second.tick = ++clock_;
    Refresh(key, now_ms);
    return Status::Ok();
  }

  EvictionDecision EvictOne(const PrefixIndex::Predicate& evictable) {
    EvictionDecision d;
    for (const Node* n : ByTick([&](const Node& x) { return Children(x.key) == 0; })) {
      if (n->pins != 0 || !evictable(EntryOf(*n))) continue;
      RemoveCascade(n->key, evictable, d.removed);
      return d;
    }
    for (const Node* n : ByTick([&](const Node& x) { return Children(x.key) == 1 && x.row; })) {
      if (n->pins != 0 || !evictable(EntryOf(*n))) continue;
      d.compacted = DropRow(nodes_.at(n->key));
      return d;
    }
    return d;
  }

  ExpirySweep Expire(uint64_t now_ms, uint64_t max_age_ms,
                     const PrefixIndex::Predicate& droppable) {
    ExpirySweep sweep;
    if (last_sweep_ && now_ms < *last_sweep_ + PrefixIndex::kExpirySweepIntervalMs) return sweep;
    last_sweep_ = now_ms;
    sweep.ran = true;
    uint64_t after_tick = 0;
    while (sweep.expired_leaves < PrefixIndex::kExpiredLeavesPerSweep) {
      const Node* next = nullptr;
      for (const auto& [key, n] : nodes_) {
        if (Children(key) == 0 && n.tick > after_tick && (next == nullptr || n.tick < next->tick)) {
          next = &n;
        }
      }
      if (next == nullptr) break;
      after_tick = next->tick;
      if (next->pins != 0 || !droppable(EntryOf(*next))) continue;
      if (now_ms < next->last_use || now_ms - next->last_use < max_age_ms) break;
      RemoveCascade(next->key, droppable, sweep.removed);
      ++sweep.expired_leaves;
    }
    return sweep;
  }

  // The removed records, sorted by key.
  Result<std::vector<RemovedRecord>> Remove(const PrefixKey& key) {
    if (nodes_.count(key) == 0) return Status::NotFound("absent");
    std::vector<RemovedRecord> out;
    if (auto parent = nodes_.at(key).parent) nodes_.at(*parent).pending = false;
    for (const PrefixKey& k : Keys()) {
      if (IsDescendantOrSelf(k, key)) out.push_back(RemovedOf(nodes_.at(k)));
    }
    for (const RemovedRecord& r : out) nodes_.erase(r.key);
    return out;
  }

  // The committed records a restart would find: every kReady record.
  std::vector<CommittedRecord> Committed() const {
    std::vector<CommittedRecord> out;
    for (const auto& [key, n] : nodes_) {
      if (n.state != TransferState::kReady) continue;
      out.push_back(CommittedRecord{key, n.parent, n.bucket, n.tail, n.location,
                                    n.row ? RowPresence::kPresent : RowPresence::kPageOnly,
                                    n.last_use});
    }
    return out;
  }

  // Rebuilds from `records` as LoadCommitted does; orphans and pruned sorted.
  LoadReport Load(std::vector<CommittedRecord> records) {
    *this = ReferenceIndex(pt_);
    LoadReport report;
    std::sort(records.begin(), records.end(),
              [](const CommittedRecord& a, const CommittedRecord& b) { return a.key < b.key; });
    std::map<PrefixKey, uint64_t> own_last_use;
    for (const CommittedRecord& r : records) {
      if (r.parent && nodes_.count(*r.parent) == 0) {
        report.orphans.push_back(r.key);
        continue;
      }
      Node n;
      n.key = r.key;
      n.parent = r.parent;
      n.bucket = r.bucket_digest;
      n.location = r.location;
      n.state = TransferState::kReady;
      n.row = r.row == RowPresence::kPresent;
      n.tail = r.tail_page_count;
      n.tick = ++clock_;
      n.last_use = r.last_use_ms;
      nodes_[r.key] = n;
      own_last_use[r.key] = r.last_use_ms;
    }
    const PrefixIndex::Predicate any = [](const IndexEntry&) { return true; };
    for (const PrefixKey& k : Keys()) {
      auto it = nodes_.find(k);
      if (it != nodes_.end() && Children(k) == 0 && !it->second.row) {
        RemoveCascade(k, any, report.pruned);
      }
    }
    std::vector<PrefixKey> order = Keys();
    std::sort(order.begin(), order.end(), [&](const PrefixKey& a, const PrefixKey& b) {
      if (own_last_use[a] != own_last_use[b]) return own_last_use[a] < own_last_use[b];
      return a < b;
    });
    for (const PrefixKey& k : order) nodes_.at(k).tick = ++clock_;
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
      if (it->second.parent) {
        uint64_t& parent_use = nodes_.at(*it->second.parent).last_use;
        parent_use = std::max(parent_use, it->second.last_use);
      }
    }
    std::sort(report.orphans.begin(), report.orphans.end());
    std::sort(report.pruned.begin(), report.pruned.end(),
              [](const RemovedRecord& a, const RemovedRecord& b) { return a.key < b.key; });
    return report;
  }

 private:
  struct Node {
    PrefixKey key;
    std::optional<PrefixKey> parent;
    Digest128 bucket{};
    NodeLocation location;
    TransferState state = TransferState::kInFlight;
    bool row = true;
    uint32_t tail = 0;
    uint32_t pins = 0;
    uint64_t tick = 0;
    uint64_t last_use = 0;
    bool pending = false;
  };

  uint32_t Tail(uint64_t c, const std::optional<PrefixKey>& parent) const {
    return static_cast<uint32_t>(c / pt_ - (parent ? parent->consumed / pt_ : 0));
  }

  uint32_t Children(const PrefixKey& key) const {
    uint32_t count = 0;
    for (const auto& [k, n] : nodes_) count += n.parent == key;
    return count;
  }

  bool IsDescendantOrSelf(PrefixKey k, const PrefixKey& ancestor) const {
    for (;;) {
      if (k == ancestor) return true;
      const std::optional<PrefixKey>& parent = nodes_.at(k).parent;
      if (!parent) return false;
      k = *parent;
    }
  }

  template <typename Filter>
  std::vector<const Node*> ByTick(Filter filter) const {
    std::vector<const Node*> out;
    for (const auto& [k, n] : nodes_) {
      if (filter(n)) out.push_back(&n);
    }
    std::sort(out.begin(), out.end(),
              [](const Node* a, const Node* b) { return a->tick < b->tick; });
    return out;
  }

  IndexEntry EntryOf(const Node& n) const {
    IndexEntry e;
    e.key = n.key;
    e.parent = n.parent;
    e.bucket_digest = n.bucket;
    e.location = n.location;
    e.state = n.state;
    e.row = n.row ? RowPresence::kPresent : RowPresence::kPageOnly;
    e.tail_page_count = n.tail;
    e.child_count = Children(n.key);
    e.pin_count = n.pins;
    e.access_tick = n.tick;
    e.last_use_ms = n.last_use;
    e.row_drop_deferred = n.pending;
    return e;
  }

  static RemovedRecord RemovedOf(const Node& n) {
    return RemovedRecord{n.key, n.location, n.state,
                         n.row ? RowPresence::kPresent : RowPresence::kPageOnly, n.tail};
  }

  void Refresh(PrefixKey key, uint64_t now_ms) {
    for (;;) {
      Node& n = nodes_.at(key);
      if (n.last_use >= now_ms) return;
      n.last_use = now_ms;
      if (!n.parent) return;
      key = *n.parent;
    }
  }

  RowDrop DropRow(Node& n) {
    n.row = false;
    n.pending = false;
    return RowDrop{n.key, n.location};
  }

  std::optional<RowDrop> PageOnlyRule(const PrefixKey& child) {
    const std::optional<PrefixKey>& parent = nodes_.at(child).parent;
    if (!parent) return std::nullopt;
    Node& p = nodes_.at(*parent);
    if (!p.parent || !p.row || Children(p.key) != 1) return std::nullopt;
    if (p.pins > 0) {
      p.pending = true;
      return std::nullopt;
    }
    return DropRow(p);
  }

  void RemoveCascade(PrefixKey key, const PrefixIndex::Predicate& allowed,
                     std::vector<RemovedRecord>& out) {
    std::optional<PrefixKey> parent = nodes_.at(key).parent;
    out.push_back(RemovedOf(nodes_.at(key)));
    nodes_.erase(key);
    while (parent) {
      Node& p = nodes_.at(*parent);
      p.pending = false;
      if (Children(p.key) != 0 || p.row || p.pins != 0 || !allowed(EntryOf(p))) return;
      std::optional<PrefixKey> next = p.parent;
      out.push_back(RemovedOf(p));
      nodes_.erase(*parent);
      parent = next;
    }
  }

  uint32_t pt_;
  std::map<PrefixKey, Node> nodes_;
  uint64_t clock_ = 0;
  std::optional<uint64_t> last_sweep_;
};

}  // namespace strata::index_test
