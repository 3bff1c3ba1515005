// PrefixIndex storage, tree shape, insert, state, pins and removal. Lookup is
// in index_lookup.cc, eviction and expiry in index_evict.cc, the startup
// rebuild in index_load.cc, invariant checks in index_check.cc.
#include "store/index/index.h"

#include <sys/mman.h>

#include <cstring>
#include <limits>

namespace strata {

namespace {

constexpr size_t kInitialHeads = 64;
// Bytes one std::map node of <uint64_t, uint32_t> costs on glibc (48 + header).
constexpr size_t kMapNodeBytes = 64;

uint64_t First8(const Digest128& d) {
  uint64_t v;
  std::memcpy(&v, d.data(), sizeof v);
  return v;
}

// Bits of the bucket digest the slot does not use (tables stay under 2^32).
uint32_t TagOf(const Digest128& bucket) { return static_cast<uint32_t>(First8(bucket) >> 32); }

// Asks the kernel to back the whole 2 MiB pages inside [data, data + bytes)
// with huge pages. A memory hint only: contents and the allocation are
// unchanged, and a kernel that refuses (THP off) leaves small pages.
void AdviseHugePages(const void* data, size_t bytes) {
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHugePage - 1);
  if (end <= begin) return;
  (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

// `count` empty hash heads, advised before they are first written so that
// large tables fault in huge pages.
std::vector<uint32_t> FreshHeads(size_t count, uint32_t empty) {
  std::vector<uint32_t> heads;
  heads.reserve(count);
  AdviseHugePages(heads.data(), heads.capacity() * sizeof(uint32_t));
  heads.assign(count, empty);
  return heads;
}

Status NotFoundError(const PrefixKey& key) {
  return Status::NotFound("no indexed record " + key.ToFileStem());
}

}  // namespace

std::string_view TransferStateName(TransferState state) {
  switch (state) {
    case TransferState::kInFlight: return "in-flight";
    case TransferState::kParked: return "parked";
    case TransferState::kSpilling: return "spilling";
    case TransferState::kReady: return "ready";
  }
  return "unknown";
}

uint64_t LookupHit::restore_page_count() const {
  uint64_t pages = 0;
  for (const ChainLink& link : chain) pages += link.tail_page_count;
  return pages - skip_pages;
}

PrefixIndex::PrefixIndex(uint32_t page_tokens)
    : page_tokens_(page_tokens),
      key_heads_(kInitialHeads, kNil),
      bucket_heads_(kInitialHeads * kBucketHeadsPerKeyHead, kNil) {
  STRATA_ASSERT(page_tokens > 0, "PrefixIndex needs a positive page size");
}

size_t PrefixIndex::KeySlot(const PrefixKey& key) const {
  return (First8(key.digest) ^ (key.consumed * 0x9e3779b97f4a7c15ULL)) & (key_heads_.size() - 1);
}

uint32_t PrefixIndex::BucketTag(const Digest128& bucket) { return TagOf(bucket); }

size_t PrefixIndex::BucketSlot(const Digest128& bucket) const {
  return First8(bucket) & (bucket_heads_.size() - 1);
}

uint32_t PrefixIndex::FindNode(const PrefixKey& key) const {
  for (uint32_t i = key_heads_[KeySlot(key)]; i != kNil; i = nodes_[i].next_in_key) {
    if (nodes_[i].key == key) return i;
  }
  return kNil;
}

uint32_t PrefixIndex::TailPages(uint64_t consumed, uint32_t parent) const {
  uint64_t base = parent == kNil ? 0 : nodes_[parent].key.consumed;
  return static_cast<uint32_t>(consumed / page_tokens_ - base / page_tokens_);
}

IndexEntry PrefixIndex::EntryOf(uint32_t idx) const {
  const Node& n = nodes_[idx];
  IndexEntry e;
  e.key = n.key;
  if (n.parent() != kNil) e.parent = nodes_[n.parent()].key;
  e.bucket_digest = n.bucket;
  e.location = n.location;
  e.state = n.state;
  e.row = n.has_row() ? RowPresence::kPresent : RowPresence::kPageOnly;
  e.tail_page_count = n.tail_pages;
  e.child_count = n.child_count;
  e.pin_count = n.pins;
  e.access_tick = n.tick;
  e.last_use_ms = n.last_use_ms;
  e.row_drop_deferred = (n.flags & kRowDropPending) != 0;
  return e;
}

RemovedRecord PrefixIndex::RemovedOf(uint32_t idx) const {
  const Node& n = nodes_[idx];
  return RemovedRecord{n.key, n.location, n.state,
                       n.has_row() ? RowPresence::kPresent : RowPresence::kPageOnly, n.tail_pages};
}

std::optional<IndexEntry> PrefixIndex::Find(const PrefixKey& key) const {
  uint32_t idx = FindNode(key);
  if (idx == kNil) return std::nullopt;
  return EntryOf(idx);
}

std::vector<IndexEntry> PrefixIndex::Entries() const {
  std::vector<IndexEntry> out;
  out.reserve(live_count_);
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    if ((nodes_[i].flags & kLive) != 0) out.push_back(EntryOf(i));
  }
  return out;
}

size_t PrefixIndex::MemoryBytes() const {
  return nodes_.capacity() * sizeof(Node) +
         (key_heads_.capacity() + bucket_heads_.capacity()) * sizeof(uint32_t) +
         (leaves_.size() + compactable_.size()) * kMapNodeBytes;
}

// ---- storage and hash chains ------------------------------------------------

void PrefixIndex::Reserve(size_t records) {
  nodes_.reserve(records);
  AdviseHugePages(nodes_.data(), nodes_.capacity() * sizeof(Node));
  size_t heads = key_heads_.size();
  while (heads < records) heads *= 2;
  if (heads != key_heads_.size()) Rehash(heads);
}

uint32_t PrefixIndex::AllocateNode() {
  uint32_t idx;
  if (free_head_ != kNil) {
    idx = free_head_;
    free_head_ = nodes_[idx].next_in_key;
    nodes_[idx] = Node{};
  } else {
    idx = static_cast<uint32_t>(nodes_.size());
    nodes_.emplace_back();
  }
  ++live_count_;
  return idx;
}

void PrefixIndex::Rehash(size_t key_head_count) {
  const size_t size = key_head_count;
  key_heads_ = FreshHeads(size, kNil);
  bucket_heads_ = FreshHeads(size * kBucketHeadsPerKeyHead, kNil);
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    if ((nodes_[i].flags & kLive) == 0) continue;
    Node& n = nodes_[i];
    uint32_t& key_head = key_heads_[KeySlot(n.key)];
    n.next_in_key = key_head;
    key_head = i;
    uint32_t& bucket_head = bucket_heads_[BucketSlot(n.bucket)];
    n.next_in_bucket = bucket_head;
    bucket_head = i;
  }
}

void PrefixIndex::LinkHashes(uint32_t idx) {
  // At most one record per head on average. The node is already counted and
  // live, so growing links it with every other.
  if (live_count_ > key_heads_.size()) {
    Rehash(key_heads_.size() * 2);
    return;
  }
  Node& n = nodes_[idx];
  uint32_t& key_head = key_heads_[KeySlot(n.key)];
  n.next_in_key = key_head;
  key_head = idx;
  uint32_t& bucket_head = bucket_heads_[BucketSlot(n.bucket)];
  n.next_in_bucket = bucket_head;
  bucket_head = idx;
}

void PrefixIndex::UnlinkHash(Heads& heads, HashChain next, size_t slot, uint32_t idx) {
  uint32_t* link = &heads[slot];
  while (*link != idx) {
    STRATA_ASSERT(*link != kNil, "record missing from its hash chain");
    link = &(nodes_[*link].*next);
  }
  *link = nodes_[idx].*next;
}

// ---- tree shape and LRU lists -----------------------------------------------

void PrefixIndex::Unlist(uint32_t idx) {
  Node& n = nodes_[idx];
  if ((n.flags & kInLeaves) != 0) leaves_.erase(n.tick);
  if ((n.flags & kInCompactable) != 0) compactable_.erase(n.tick);
  n.flags &= ~(kInLeaves | kInCompactable);
}

void PrefixIndex::List(uint32_t idx) {
  Node& n = nodes_[idx];
  STRATA_ASSERT((n.flags & (kInLeaves | kInCompactable)) == 0, "record listed twice");
  if (n.child_count == 0) {
    leaves_.emplace_hint(leaves_.end(), n.tick, idx);
    n.flags |= kInLeaves;
  } else if (n.child_count == 1 && n.has_row()) {
    compactable_.emplace_hint(compactable_.end(), n.tick, idx);
    n.flags |= kInCompactable;
  }
}

void PrefixIndex::AttachToParent(uint32_t idx, uint32_t parent) {
  if (parent == kNil) return;
  Node& p = nodes_[parent];
  Node& n = nodes_[idx];
  n.ancestors[0] = parent;
  for (size_t i = 1; i < kAncestorWindow; ++i) n.ancestors[i] = p.ancestors[i - 1];
  Unlist(parent);
  n.next_sibling = p.first_child;
  p.first_child = idx;
  ++p.child_count;
  // A second child makes the parent a branch point: it keeps its row.
  p.flags &= ~kRowDropPending;
  List(parent);
}

void PrefixIndex::DetachFromParent(uint32_t idx) {
  uint32_t parent = nodes_[idx].parent();
  if (parent == kNil) return;
  Node& p = nodes_[parent];
  uint32_t* link = &p.first_child;
  while (*link != idx) {
    STRATA_ASSERT(*link != kNil, "record missing from its parent's children");
    link = &nodes_[*link].next_sibling;
  }
  *link = nodes_[idx].next_sibling;
  Unlist(parent);
  --p.child_count;
  // The child whose commit deferred the row drop is gone.
  p.flags &= ~kRowDropPending;
  List(parent);
}

void PrefixIndex::RefreshAncestors(uint32_t idx, uint64_t now_ms) {
  // last_use never decreases from a record to its parent, so the walk stops
  // at the first ancestor already as fresh.
  for (; idx != kNil && nodes_[idx].last_use_ms < now_ms; idx = nodes_[idx].parent()) {
    PrefetchAncestors(nodes_[idx]);
    nodes_[idx].last_use_ms = now_ms;
  }
}

void PrefixIndex::PrefetchAncestors(const Node& n) const {
  for (uint32_t a : n.ancestors) {
    if (a == kNil) return;
    // The second line too: a chain walk reads both halves of a node.
    __builtin_prefetch(&nodes_[a]);
    __builtin_prefetch(reinterpret_cast<const char*>(&nodes_[a]) + 64);
  }
}

void PrefixIndex::RemoveNode(uint32_t idx, std::vector<RemovedRecord>& out) {
  Node& n = nodes_[idx];
  STRATA_ASSERT(n.child_count == 0, "removing a record that has children");
  out.push_back(RemovedOf(idx));
  DetachFromParent(idx);
  Unlist(idx);
  UnlinkHash(key_heads_, &Node::next_in_key, KeySlot(n.key), idx);
  UnlinkHash(bucket_heads_, &Node::next_in_bucket, BucketSlot(n.bucket), idx);
  n.flags = 0;
  n.next_in_key = free_head_;
  free_head_ = idx;
  --live_count_;
}

RowDrop PrefixIndex::DropRow(uint32_t idx) {
  Node& n = nodes_[idx];
  Unlist(idx);
  n.flags &= ~(kHasRow | kRowDropPending);
  List(idx);
  return RowDrop{n.key, n.location};
}

std::optional<RowDrop> PrefixIndex::ApplyPageOnlyRule(uint32_t committed_idx) {
  uint32_t parent = nodes_[committed_idx].parent();
  if (parent == kNil) return std::nullopt;
  Node& p = nodes_[parent];
  if (p.parent() == kNil || !p.has_row() || p.child_count != 1) return std::nullopt;
  if (p.pins > 0) {
    p.flags |= kRowDropPending;
    return std::nullopt;
  }
  return DropRow(parent);
}

// ---- publication, state, pins -----------------------------------------------

Result<InsertResult> PrefixIndex::Insert(const NewRecord& record, uint64_t now_ms) {
  const PrefixKey& key = record.key;
  if (key.consumed == 0) {
    return Status::InvalidArgument("record " + key.ToFileStem() + " consumes no tokens");
  }
  if (record.parent && record.parent->consumed >= key.consumed) {
    return Status::InvalidArgument("record " + key.ToFileStem() + " names parent " +
                                   record.parent->ToFileStem() + " that is not shorter");
  }
  if (key.consumed / page_tokens_ > std::numeric_limits<uint32_t>::max()) {
    return Status::InvalidArgument("record " + key.ToFileStem() + " spans over 2^32-1 pages");
  }
  if (uint32_t existing = FindNode(key); existing != kNil) {
    const Node& n = nodes_[existing];
    InsertResult r;
    r.outcome = InsertOutcome::kAlreadyPresent;
    r.tail_page_count = n.tail_pages;
    r.root = n.parent() == kNil;
    r.state = n.state;
    return r;
  }
  if (live_count_ >= kNil - 1) {
    return Status::FailedPrecondition("prefix index full at " + std::to_string(live_count_) +
                                      " records");
  }
  uint32_t parent = record.parent ? FindNode(*record.parent) : kNil;
  uint32_t idx = AllocateNode();
  Node& n = nodes_[idx];
  n.key = key;
  n.bucket = record.bucket_digest;
  n.bucket_tag = BucketTag(record.bucket_digest);
  n.location = record.location;
  n.state = record.state;
  n.flags = kLive | (record.row == RowPresence::kPresent ? kHasRow : 0);
  n.tail_pages = TailPages(key.consumed, parent);
  n.tick = ++clock_;
  n.last_use_ms = now_ms;
  LinkHashes(idx);
  AttachToParent(idx, parent);
  List(idx);
  RefreshAncestors(parent, now_ms);

  InsertResult r;
  r.tail_page_count = nodes_[idx].tail_pages;
  r.root = parent == kNil;
  r.state = record.state;
  if (record.state == TransferState::kReady) r.parent_row_dropped = ApplyPageOnlyRule(idx);
  return r;
}

Result<std::optional<RowDrop>> PrefixIndex::SetState(const PrefixKey& key, TransferState state) {
  uint32_t idx = FindNode(key);
  if (idx == kNil) return NotFoundError(key);
  TransferState before = nodes_[idx].state;
  nodes_[idx].state = state;
  if (state == TransferState::kReady && before != TransferState::kReady) {
    return ApplyPageOnlyRule(idx);
  }
  return std::optional<RowDrop>();
}

Status PrefixIndex::SetLocation(const PrefixKey& key, NodeLocation location) {
  uint32_t idx = FindNode(key);
  if (idx == kNil) return NotFoundError(key);
  nodes_[idx].location = location;
  return Status::Ok();
}

Status PrefixIndex::Pin(const PrefixKey& key) {
  uint32_t idx = FindNode(key);
  if (idx == kNil) return NotFoundError(key);
  STRATA_ASSERT(nodes_[idx].pins < std::numeric_limits<uint32_t>::max(), "pin count overflow");
  ++nodes_[idx].pins;
  return Status::Ok();
}

Result<std::optional<RowDrop>> PrefixIndex::Unpin(const PrefixKey& key) {
  uint32_t idx = FindNode(key);
  if (idx == kNil) return NotFoundError(key);
  Node& n = nodes_[idx];
  if (n.pins == 0) {
    return Status::FailedPrecondition("record " + key.ToFileStem() + " is not pinned");
  }
  if (--n.pins == 0 && (n.flags & kRowDropPending) != 0) return std::optional(DropRow(idx));
  return std::optional<RowDrop>();
}

Status PrefixIndex::Touch(const PrefixKey& key, uint64_t now_ms) {
  uint32_t idx = FindNode(key);
  if (idx == kNil) return NotFoundError(key);
  Unlist(idx);
  nodes_[idx].tick = ++clock_;
  List(idx);
  RefreshAncestors(idx, now_ms);
  return Status::Ok();
}

Result<std::vector<RemovedRecord>> PrefixIndex::Remove(const PrefixKey& key) {
  uint32_t top = FindNode(key);
  if (top == kNil) return NotFoundError(key);
  std::vector<RemovedRecord> out;
  // Post-order over the subtree: a node goes once its children have.
  std::vector<uint32_t> stack{top};
  while (!stack.empty()) {
    uint32_t idx = stack.back();
    if (nodes_[idx].first_child != kNil) {
      stack.push_back(nodes_[idx].first_child);
      continue;
    }
    stack.pop_back();
    RemoveNode(idx, out);
  }
  return out;
}

}  // namespace strata
