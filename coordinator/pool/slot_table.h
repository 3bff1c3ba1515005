// SlotTable: which of the arena's record slots are free, owned by a pooled
// record, or retired while a copy still reads them. Pure bookkeeping over slot
// numbers; the arena (arena.h) holds the bytes.
//
// The lifetime rule the pool promises: a slot is never handed out again while
// a copy holds it. Retiring a held slot only marks it; it returns to the free
// list at its last Unhold.
//
// Owned by one thread; not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "store/base/ids.h"
#include "store/base/status.h"

namespace strata::pool {

using SlotId = StrongId<struct PoolSlotTag, uint32_t>;

class SlotTable {
 public:
  explicit SlotTable(uint32_t slot_count);

  uint32_t slot_count() const { return static_cast<uint32_t>(slots_.size()); }
  uint32_t free_count() const { return static_cast<uint32_t>(free_.size()); }
  // Retired slots a copy still holds.
  uint32_t retired_held_count() const { return retired_held_; }

  // Takes `count` free slots, or nothing (nullopt) when fewer are free.
  std::optional<std::vector<SlotId>> Take(uint32_t count);

  // A copy starts reading or writing an owned slot. kFailedPrecondition on a
  // free or retired slot; kInvalidArgument on a slot out of range.
  Status Hold(SlotId slot);
  // The copy ended. A retired slot whose last hold this was becomes free.
  // kFailedPrecondition when the slot is not held.
  Status Unhold(SlotId slot);

  // The owner lets the slots go: free now, or at their last Unhold.
  // kFailedPrecondition on a slot that is not owned.
  Status Retire(std::span<const SlotId> slots);

  bool IsHeld(SlotId slot) const;
  bool IsFree(SlotId slot) const;

  // Every slot is in exactly one state and the free list matches. O(slots).
  Status CheckInvariants() const;

 private:
  enum class State : uint8_t { kFree, kOwned, kRetired };
  struct Slot {
    State state = State::kFree;
    uint32_t holds = 0;
  };
  Status CheckRange(SlotId slot) const;

  std::vector<Slot> slots_;
  std::vector<SlotId> free_;  // a stack: the most recently freed slot goes first
  uint32_t retired_held_ = 0;
};

}  // namespace strata::pool
