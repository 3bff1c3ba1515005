// The values PrefixIndex (index.h) takes and returns: record states, what a
// store publishes or rebuilds, and the decisions the index hands back.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "store/base/digest.h"
#include "store/base/ids.h"
#include "store/base/prefix_key.h"
#include "store/base/status.h"

namespace strata {

// Where a record's bytes live in its store (a slab handle, a file generation):
// opaque to the index, which keeps it and hands it back unchanged.
using NodeLocation = StrongId<struct NodeLocationTag, uint64_t>;

// How far a record's bytes have travelled into one store's tier. The index
// only keeps it; Lookup's StateSet says which states a store can restore from.
enum class TransferState : uint8_t {
  kInFlight,  // bytes still arriving here (copy-out, or a new file write): not restorable
  kParked,    // complete in host memory, no file written yet (a composite's disk index)
  kSpilling,  // complete in host memory, its file write in flight (a composite's disk index)
  kReady,     // complete and committed in this tier (resident slabs, or a renamed file)
};
std::string_view TransferStateName(TransferState state);

// Whether a record still holds its state row. A page-only record never matches
// a lookup but still supplies its pages to its descendants' chains.
enum class RowPresence : uint8_t { kPresent, kPageOnly };

// A set of TransferStates, e.g. the states a store can restore from.
class StateSet {
 public:
  constexpr StateSet() = default;
  constexpr StateSet(std::initializer_list<TransferState> states) {
    for (TransferState s : states) bits_ |= Bit(s);
  }
  constexpr bool contains(TransferState s) const { return (bits_ & Bit(s)) != 0; }

 private:
  static constexpr uint8_t Bit(TransferState s) {
    return static_cast<uint8_t>(1u << static_cast<unsigned>(s));
  }
  uint8_t bits_ = 0;
};

// A record a store publishes (PrefixIndex::Insert).
struct NewRecord {
  PrefixKey key;
  // The nearest offered ancestor. Absent, or absent from the index, makes the
  // record a root record holding its whole page chain.
  std::optional<PrefixKey> parent;
  Digest128 bucket_digest{};  // history.bucket_digest(key.consumed)
  NodeLocation location;
  TransferState state = TransferState::kInFlight;
  RowPresence row = RowPresence::kPresent;
};

// A record rebuilt from committed storage at startup (the disk scan).
struct CommittedRecord {
  PrefixKey key;
  std::optional<PrefixKey> parent;  // absent for a root record
  Digest128 bucket_digest{};
  uint32_t tail_page_count = 0;  // as stored; checked against the keys
  NodeLocation location;
  RowPresence row = RowPresence::kPresent;
  uint64_t last_use_ms = 0;  // e.g. the file's mtime: seeds access order and age
};

// A snapshot of one indexed record.
struct IndexEntry {
  PrefixKey key;
  std::optional<PrefixKey> parent;
  Digest128 bucket_digest{};
  NodeLocation location;
  TransferState state = TransferState::kInFlight;
  RowPresence row = RowPresence::kPresent;
  uint32_t tail_page_count = 0;  // pages since the parent; the whole chain for a root
  uint32_t child_count = 0;
  uint32_t pin_count = 0;
  uint64_t access_tick = 0;        // LRU position: larger is more recently used
  uint64_t last_use_ms = 0;        // for expiry; never older than any descendant's
  bool row_drop_deferred = false;  // the page-only rule waits for the last unpin

  friend bool operator==(const IndexEntry&, const IndexEntry&) = default;
};

// A record the index removed: the store frees its slabs or unlinks its file.
struct RemovedRecord {
  PrefixKey key;
  NodeLocation location;
  TransferState state = TransferState::kInFlight;
  RowPresence row = RowPresence::kPresent;  // whether it still held its row
  uint32_t tail_page_count = 0;

  friend bool operator==(const RemovedRecord&, const RemovedRecord&) = default;
};

// A record whose row the index dropped (compaction or the page-only rule): the
// store frees its row slots or truncates its file at the row segment.
struct RowDrop {
  PrefixKey key;
  NodeLocation location;

  friend bool operator==(const RowDrop&, const RowDrop&) = default;
};

enum class InsertOutcome : uint8_t { kInserted, kAlreadyPresent };

struct InsertResult {
  InsertOutcome outcome = InsertOutcome::kInserted;
  // The pages the record holds: since its parent, or its whole chain as a root
  // record. For kAlreadyPresent, the existing record's.
  uint32_t tail_page_count = 0;
  bool root = false;                               // no parent in the index
  TransferState state = TransferState::kInFlight;  // the existing record's, if present
  // Set when a kReady insert made its parent page-only (the page-only rule).
  std::optional<RowDrop> parent_row_dropped;
};

// One record of a lookup's chain.
struct ChainLink {
  PrefixKey key;
  NodeLocation location;
  TransferState state = TransferState::kInFlight;
  RowPresence row = RowPresence::kPresent;
  uint32_t tail_page_count = 0;

  friend bool operator==(const ChainLink&, const ChainLink&) = default;
};

struct LookupHit {
  // Ascending by consumed count; back() is the endpoint and holds its row.
  std::vector<ChainLink> chain;
  // The consumed count p of the parent the chain stops at (at or below the
  // resident count), or 0 when the chain starts at a root record.
  uint64_t base_consumed = 0;
  // Leading chain pages the GPU already holds: a/page_tokens - p/page_tokens.
  uint32_t skip_pages = 0;

  const PrefixKey& endpoint() const { return chain.back().key; }
  // Pages to restore: the chain's tail pages minus skip_pages.
  uint64_t restore_page_count() const;

  friend bool operator==(const LookupHit&, const LookupHit&) = default;
};

// What one EvictOne call decided. Empty when nothing could go.
struct EvictionDecision {
  // A leaf, then the page-only ancestors it left childless, in that order.
  std::vector<RemovedRecord> removed;
  // Set instead when no leaf could go: an ancestor compacted to page-only.
  std::optional<RowDrop> compacted;

  bool empty() const { return removed.empty() && !compacted.has_value(); }
};

struct ExpirySweep {
  bool ran = false;  // false while the last sweep is under the sweep interval old
  uint32_t expired_leaves = 0;
  // Expired leaves, each followed by the page-only ancestors that went with it.
  std::vector<RemovedRecord> removed;
};

// What LoadCommitted kept out of the index; the caller deletes their storage.
struct LoadReport {
  struct Rejected {
    PrefixKey key;
    Status why;
  };
  std::vector<Rejected> rejected;     // inconsistent with the index's rules
  std::vector<PrefixKey> orphans;     // parent missing, and their descendants
  std::vector<RemovedRecord> pruned;  // childless page-only records (and ancestors)
};

}  // namespace strata
