// SlotAccess: where an instance's copies into and out of granted pool slots
// go (docs/pool.md, "The data channel"). Two implementations: MappedSlots,
// the manager's arena mapped here (an instance on the manager's host), and
// RemoteSlots (remote_slots.h), the manager's arena through data connections
// over TCP (an instance on any host). Both hash what they copy in the same
// pass (hashed_copy.h): a put's checksum is that of the bytes it sent into
// the slots, and a claim's copy is checked against the record's checksum.
//
// Thread: an implementation says; a HashPipeline is the calling thread's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "coordinator/pool/arena.h"
#include "coordinator/pool/hash_pipeline.h"
#include "coordinator/pool/pool_catalog.h"
#include "store/base/status.h"

namespace strata::pool {

class SlotAccess {
 public:
  virtual ~SlotAccess() = default;

  // Copies `bytes` into open put `put`'s granted `slots` (slot i holds bytes
  // [i * slot_bytes, ...)); the XXH3-64 of what was written, which its
  // commit carries. kCorruption (nothing copied) when the slots do not fit;
  // kUnavailable when the way to the slots failed. `bytes` must stay
  // unchanged until it returns.
  virtual Result<uint64_t> CopyIn(PutId put, std::span<const SlotId> slots,
                                  std::span<const std::byte> bytes, HashPipeline& hash) = 0;
  // Copies record `index` (`r`, as granted) of held claim `claim` into
  // `out` (resized to its bytes; a buffer already that size is neither
  // reallocated nor zero-filled), checking it against r.checksum in the same
  // pass. kCorruption when it fails the check or its slots do not fit it;
  // kUnavailable when the way to the slots failed. Unless OK, `out` holds
  // unchecked bytes and must not be used.
  virtual Status CopyOut(ClaimId claim, uint32_t index, const ClaimedRecord& r,
                         std::vector<std::byte>& out, HashPipeline& hash) = 0;
};

// The arena mapped in this process (slot_copies.h). Stateless: any thread.
// It holds the mapping, so a copy never reads unmapped memory even after
// the connection that granted it is gone (the checksum then fails it).
class MappedSlots final : public SlotAccess {
 public:
  explicit MappedSlots(std::shared_ptr<Arena> arena) : arena_(std::move(arena)) {}
  Result<uint64_t> CopyIn(PutId put, std::span<const SlotId> slots,
                          std::span<const std::byte> bytes, HashPipeline& hash) override;
  Status CopyOut(ClaimId claim, uint32_t index, const ClaimedRecord& r, std::vector<std::byte>& out,
                 HashPipeline& hash) override;
  const std::shared_ptr<Arena>& arena() const { return arena_; }

 private:
  std::shared_ptr<Arena> arena_;
};

}  // namespace strata::pool
