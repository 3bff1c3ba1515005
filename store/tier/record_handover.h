// The seam between a host tier and what lies below the instance (seed 2.15):
// a record leaving the last local tier is offered to an EvictionSink before
// its bytes are discarded, and a record arriving from outside (a pool claim)
// enters a tier through its RecordIntake. Kept apart from host_store.h so the
// pool side depends on this header only.
//
// Thread: the owning store's thread (the model worker). Neither call may keep
// the spans past its return.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "store/base/prefix_key.h"
#include "store/base/status.h"

namespace strata {

// A committed record in its stored layout (store/record/record_layout.h):
// one piece per stored page record, then the row segment's pieces (none when
// the record lost its row). The flags say which shares are replicated.
struct RecordView {
  PrefixKey key;
  std::optional<PrefixKey> parent;  // the parent it was stored under, if any
  Digest128 bucket{};
  uint32_t tail_pages = 0;  // pages since `parent` (the whole chain for a root)
  bool replicated_pages = false;
  bool replicated_row = false;
  std::vector<std::span<const std::byte>> pages;
  std::vector<std::span<const std::byte>> row;

  bool has_row() const { return !row.empty(); }
};

// Receives records evicted from the end of an instance's local chain. Called
// before the record's slots are released: the views' bytes stay valid during
// the call, so the sink copies what it keeps (the source is retained until it
// returns). `chain` is the evicted record last, after the ancestors the tier
// still holds (root side first), which stay local: a record is only useful
// below its parent, so the sink may need to pass them on first. Whatever the
// sink does, the tier then discards the last record and keeps the others.
//
// Demotion (seed 2.15, "before they fill"; the source retained until the
// manager accepts): a tier with a sink also offers its coldest records while
// it is above its headroom floor, not yet full, as copies it keeps
// (OnDemoted), but only while TakesDemotions() says the sink can take one
// now. The sink reports each demoted record's outcome back
// (TakeDemotionOutcomes): accepted, and the tier lets its copy go; or given
// up (refused, too large, the manager gone), and the tier keeps it, never
// demoting it again. A demotion never discards data.
class EvictionSink {
 public:
  virtual ~EvictionSink() = default;
  virtual void OnEvicted(std::span<const RecordView> chain) = 0;
  // Whether a demotion offered now would be taken.
  virtual bool TakesDemotions() const { return false; }
  // `chain` (held ancestors root first, the demoted record last), every
  // record of it still held by the tier; the sink copies what it keeps.
  virtual void OnDemoted(std::span<const RecordView> /*chain*/) {}
  // Appends the keys of demoted records (any record of an OnDemoted chain)
  // the manager accepted, and those given up, since the last call.
  virtual void TakeDemotionOutcomes(std::vector<PrefixKey>& /*accepted*/,
                                    std::vector<PrefixKey>& /*given_up*/) {}
};

// Reads committed records a tier holds, to pass them below the instance
// while the tier keeps them (a pool-only instance's published records).
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // `key`'s record, after the ancestors the tier still holds (root side
  // first, at most `ancestors_max` of them, the nearest kept), as
  // EvictionSink's `chain`; empty when `key` is not a committed record here.
  // The views' bytes stay valid until the tier's next call.
  virtual std::vector<RecordView> HeldChain(const PrefixKey& key, size_t ancestors_max) const = 0;
};

// Takes a record from outside into a tier as a committed local record, so the
// ordinary Lookup and Fetch restore it. kAlreadyExists when the key is held;
// kBusy when no room can be made; kFailedPrecondition when the
// record's tail disagrees with the tier's index (its parent is not held).
class RecordIntake {
 public:
  virtual ~RecordIntake() = default;
  virtual Status Import(const RecordView& record, uint64_t now_ms) = 0;
  // Whether a ready record `key` is held: an Import of a record whose parent
  // is `key` extends it (a pool claim starts above the deepest such record).
  virtual bool Holds(const PrefixKey& key) const = 0;
};

}  // namespace strata
