// PrefixIndex: one store's tree of prefix checkpoints (seed 2.3), keyed by
// exact-endpoint PrefixKey, with a bucket map from the aligned 64-token
// boundary at or below each endpoint to the records ending in that block.
//
// Pure logic: no threads, I/O, clock reads or randomness. Time comes in as a
// millisecond count the caller chooses (any monotone clock); decisions come
// back as values (removed records, dropped rows) for the store to act on.
// Owned by one thread; not thread-safe. The rules are in docs/architecture.md
// ("The prefix index").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "store/base/prefix_history.h"
#include "store/index/index_types.h"

namespace strata {

class PrefixIndex {
 public:
  // Decides whether a store lets a record go (eviction, compaction, expiry).
  using Predicate = std::function<bool(const IndexEntry&)>;

  // Expiry sweeps run at most this often (by the times passed to Expire).
  static constexpr uint64_t kExpirySweepIntervalMs = 60'000;
  // A sweep stops after expiring this many leaves.
  static constexpr uint32_t kExpiredLeavesPerSweep = 64;

  // page_tokens comes from a validated geometry; 0 is a bug.
  explicit PrefixIndex(uint32_t page_tokens);

  uint32_t page_tokens() const { return page_tokens_; }
  size_t size() const { return live_count_; }
  bool Contains(const PrefixKey& key) const { return FindNode(key) != kNil; }
  std::optional<IndexEntry> Find(const PrefixKey& key) const;
  // Every record, in no particular order.
  std::vector<IndexEntry> Entries() const;
  // Heap bytes the index holds (nodes, hash heads, LRU sets), approximately.
  size_t MemoryBytes() const;

  // Makes room for `records` records so that reaching them never grows the
  // index's arrays (a growth copies them on the owning thread). Stores call
  // it at startup with their record bound. The node array and hash heads are
  // advised for transparent huge pages (a hint; the bytes held are the same):
  // at 1M records they span ~140 MB, and 4 KiB pages cost a TLB miss per
  // node a chain walk visits and a page fault per 32 nodes inserted.
  void Reserve(size_t records);

  // Publishes a record as the newest in LRU order, refreshing its ancestors'
  // last use. A key already present (in any state) is reported, not changed.
  // A record whose parent is absent becomes a root record. Inserting straight
  // into kReady applies the page-only rule to its parent (see SetState).
  // kInvalidArgument: zero consumed tokens, a parent not shorter than the key,
  // or more than 2^32-1 tail pages. kFailedPrecondition: 2^32-1 records.
  Result<InsertResult> Insert(const NewRecord& record, uint64_t now_ms);

  // Rebuilds an empty index from committed records (state kReady), in any
  // order: access order follows last_use_ms; a record whose parent is missing
  // or rejected is an orphan, with its descendants; childless page-only
  // records are pruned with the page-only ancestors they leave childless. The
  // page-only rule is not applied. kFailedPrecondition if the index is not empty.
  Result<LoadReport> LoadCommitted(std::vector<CommittedRecord> records);

  // The seed's lookup (2.3; max_consumed is its `before`, inclusive): walks
  // `history`'s aligned boundaries from the deepest at or below max_consumed
  // down to the block holding
  // resident_consumed (a). A record qualifies when it holds its row, its state
  // is in `restorable`, a < c <= max_consumed, and history.key_at(c) is its
  // key; it is feasible when its ancestors above a are all in `restorable`.
  // The first feasible record wins, deepest first. Does not refresh anything.
  std::optional<LookupHit> Lookup(const PrefixHistory& history, uint64_t resident_consumed,
                                  uint64_t max_consumed, StateSet restorable) const;

  // Changes a record's state. Entering kReady is its commit: a parent that is
  // not a root record, holds its row and has this as its only child becomes
  // page-only (returned), or, while pinned, at its last unpin. kNotFound.
  Result<std::optional<RowDrop>> SetState(const PrefixKey& key, TransferState state);
  Status SetLocation(const PrefixKey& key, NodeLocation location);

  // A pinned record is never evicted, compacted or expired, and keeps its row.
  // Stores pin every record a transfer reads or writes. kNotFound.
  Status Pin(const PrefixKey& key);
  // Returns the deferred page-only row drop if the last pin released it.
  // kNotFound; kFailedPrecondition if not pinned.
  Result<std::optional<RowDrop>> Unpin(const PrefixKey& key);

  // Use of a record (reuse, restore): newest in LRU order, and it and its
  // ancestors get last use max(theirs, now_ms). kNotFound.
  Status Touch(const PrefixKey& key, uint64_t now_ms);

  // One eviction step: the least recently used unpinned leaf that `evictable`
  // allows goes, with the page-only ancestors it leaves childless that are
  // unpinned and allowed. When no leaf can go, the least recently used
  // unpinned single-child ancestor holding its row that is allowed is
  // compacted to page-only instead. Call again for more room.
  EvictionDecision EvictOne(const Predicate& evictable);
  // The leaf EvictOne would remove first among those `allowed` (unpinned,
  // least recently used), removing nothing; nullopt when none is.
  std::optional<IndexEntry> ColdestLeaf(const Predicate& allowed) const;

  // Expiry (seed 2.5): at most once per kExpirySweepIntervalMs, walks leaves
  // from the least recently used, skipping pinned ones and those `droppable`
  // refuses, stopping at the first fresh leaf (now_ms - last use < max_age_ms)
  // or after kExpiredLeavesPerSweep expired leaves. Each expired leaf goes with
  // the page-only ancestors it leaves childless (unpinned and droppable).
  ExpirySweep Expire(uint64_t now_ms, uint64_t max_age_ms, const Predicate& droppable);

  // Removes a record and all its descendants, ignoring pins: for records whose
  // bytes are gone (a failed write, removal from the tier below). Pins held on
  // them die with them. Parents left childless stay. kNotFound.
  Result<std::vector<RemovedRecord>> Remove(const PrefixKey& key);

  // Checks every structural invariant; O(records). For tests and debugging.
  Status CheckInvariants() const;

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  enum Flag : uint8_t {
    kLive = 1,
    kHasRow = 2,
    kRowDropPending = 4,
    kInLeaves = 8,
    kInCompactable = 16,
  };

  // A record's nearest ancestors (parent first) are fixed for its life: a
  // record only goes once its children have. A chain walk prefetches them.
  static constexpr size_t kAncestorWindow = 4;

  // 128 bytes, 64-byte aligned: the first cache line holds what a chain walk
  // reads; the second the bucket digest and the tree and LRU bookkeeping.
  struct alignas(64) Node {
    PrefixKey key;
    NodeLocation location;
    uint32_t ancestors[kAncestorWindow] = {kNil, kNil, kNil, kNil};
    uint32_t tail_pages = 0;
    uint32_t next_in_bucket = kNil;  // bucket hash chain
    uint32_t bucket_tag = 0;         // BucketTag(bucket): probes read this line only
    TransferState state = TransferState::kInFlight;
    uint8_t flags = 0;
    Digest128 bucket{};
    uint32_t next_in_key = kNil;  // key hash chain; the free list when dead
    uint32_t first_child = kNil;
    uint32_t next_sibling = kNil;
    uint32_t child_count = 0;
    uint32_t pins = 0;
    uint64_t tick = 0;
    uint64_t last_use_ms = 0;

    uint32_t parent() const { return ancestors[0]; }
    bool has_row() const { return (flags & kHasRow) != 0; }
  };
  static_assert(sizeof(Node) == 128, "a node is two cache lines");
  static_assert(offsetof(Node, flags) < 64, "a chain walk and a probe read one line");
  using HashChain = uint32_t Node::*;
  using Heads = std::vector<uint32_t>;

  uint32_t FindNode(const PrefixKey& key) const;
  IndexEntry EntryOf(uint32_t idx) const;
  RemovedRecord RemovedOf(uint32_t idx) const;
  uint32_t TailPages(uint64_t consumed, uint32_t parent) const;

  // Storage and hash chains.
  uint32_t AllocateNode();
  void LinkHashes(uint32_t idx);
  void UnlinkHash(Heads& heads, HashChain next, size_t slot, uint32_t idx);
  // Resizes both head arrays (key_head_count a power of two) and relinks.
  void Rehash(size_t key_head_count);
  size_t KeySlot(const PrefixKey& key) const;
  size_t BucketSlot(const Digest128& bucket) const;
  static uint32_t BucketTag(const Digest128& bucket);

  // Tree shape and LRU classification.
  void AttachToParent(uint32_t idx, uint32_t parent);
  void DetachFromParent(uint32_t idx);
  void Unlist(uint32_t idx);
  void List(uint32_t idx);
  void RefreshAncestors(uint32_t idx, uint64_t now_ms);
  // Starts loading the ancestor window, so a walk up a chain overlaps its
  // cache misses instead of taking them one by one.
  void PrefetchAncestors(const Node& n) const;
  // Frees a childless node and appends it to `out`.
  void RemoveNode(uint32_t idx, std::vector<RemovedRecord>& out);
  // Removes a childless node, then walks up removing page-only ancestors left
  // childless while they are unpinned and `allowed` agrees.
  void RemoveWithPageOnlyAncestors(uint32_t idx, const Predicate& allowed,
                                   std::vector<RemovedRecord>& out);
  RowDrop DropRow(uint32_t idx);
  std::optional<RowDrop> ApplyPageOnlyRule(uint32_t committed_idx);

  // Loads the hash heads and first records of blocks high down to low
  // (at most 8 of them) ahead of their probes.
  void PrefetchBuckets(const PrefixHistory& history, uint64_t high, uint64_t low) const;
  bool Feasible(uint32_t candidate, uint64_t resident, StateSet restorable, LookupHit& hit) const;
  // Probes one bucket; fills `hit` and returns true on a feasible match.
  bool ProbeBucket(const PrefixHistory& history, uint64_t block, uint64_t resident, uint64_t top,
                   StateSet restorable, LookupHit& hit) const;

  Status CheckNode(uint32_t idx) const;

  uint32_t page_tokens_;
  std::vector<Node> nodes_;
  uint32_t free_head_ = kNil;
  size_t live_count_ = 0;
  // Chained hash heads over nodes_, powers of two grown together: at most one
  // record per key head, half a record per bucket head (a lookup probes many
  // buckets that hold nothing of its history).
  static constexpr size_t kBucketHeadsPerKeyHead = 2;
  Heads key_heads_;
  Heads bucket_heads_;
  // Access tick -> node, for leaves and for compaction candidates (one child,
  // row present). Pinned and refused nodes stay listed and are skipped.
  std::map<uint64_t, uint32_t> leaves_;
  std::map<uint64_t, uint32_t> compactable_;
  uint64_t clock_ = 0;
  std::optional<uint64_t> last_sweep_ms_;
};

}  // namespace strata
