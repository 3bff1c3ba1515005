#include "coordinator/pool/slot_copies.h"

#include <algorithm>

#include "coordinator/pool/hashed_copy.h"
#include "coordinator/pool/slot_access.h"

namespace strata::pool {

Result<uint64_t> CopyIntoSlots(const Arena& arena, std::span<const SlotId> slots,
                               std::span<const std::byte> bytes, HashPipeline& hash) {
  STRATA_RETURN_IF_ERROR(
      CheckSlotsFit(slots, bytes.size(), arena.slot_bytes(), arena.slot_count()));
  hash.Reset();
  uint64_t at = 0;
  for (SlotId slot : slots) {
    const uint64_t n = std::min<uint64_t>(arena.slot_bytes(), bytes.size() - at);
    CopyHashed(arena.Slot(slot).first(n), bytes.subspan(at, n), hash);
    at += n;
  }
  return hash.Digest();
}

Status CopyOutOfSlots(const Arena& arena, const ClaimedRecord& r, std::vector<std::byte>& out,
                      HashPipeline& hash) {
  STRATA_RETURN_IF_ERROR(CheckSlotsFit(r.slots, r.bytes, arena.slot_bytes(), arena.slot_count()));
  // Reset first: it waits for any piece still being hashed, which may lie
  // in `out`. A buffer already this size keeps its bytes: they are all
  // overwritten.
  hash.Reset();
  out.resize(r.bytes);
  uint64_t at = 0;
  for (SlotId slot : r.slots) {
    const uint64_t n = std::min<uint64_t>(arena.slot_bytes(), r.bytes - at);
    CopyHashed(std::span<std::byte>(out).subspan(at, n), arena.Slot(slot).first(n), hash);
    at += n;
  }
  if (hash.Digest() != r.checksum) {
    return Status::Corruption("pooled record " + r.key.ToFileStem() + " fails its checksum");
  }
  return Status::Ok();
}

}  // namespace strata::pool

namespace strata::pool {

Result<uint64_t> MappedSlots::CopyIn(PutId /*put*/, std::span<const SlotId> slots,
                                     std::span<const std::byte> bytes, HashPipeline& hash) {
  return CopyIntoSlots(*arena_, slots, bytes, hash);
}

Status MappedSlots::CopyOut(ClaimId /*claim*/, uint32_t /*index*/, const ClaimedRecord& r,
                            std::vector<std::byte>& out, HashPipeline& hash) {
  return CopyOutOfSlots(*arena_, r, out, hash);
}

}  // namespace strata::pool
