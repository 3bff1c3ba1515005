#include "coordinator/pool/hashed_copy.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "store/base/assert.h"

namespace strata::pool {

void CopyHashed(std::span<std::byte> dst, std::span<const std::byte> src, Xxh3Stream& hash) {
  STRATA_ASSERT(dst.size() == src.size(), "CopyHashed needs equal sizes");
  for (size_t at = 0; at < src.size(); at += kHashedCopyChunkBytes) {
    const size_t n = std::min(kHashedCopyChunkBytes, src.size() - at);
    std::memcpy(dst.data() + at, src.data() + at, n);
    hash.Update(dst.subspan(at, n));
  }
}

Status CheckSlotsFit(std::span<const SlotId> slots, uint64_t record_bytes, uint64_t slot_bytes,
                     uint32_t slot_count) {
  if (slot_bytes == 0) return Status::Corruption("the arena has zero-byte slots");
  const uint64_t need = (record_bytes + slot_bytes - 1) / slot_bytes;
  if (slots.size() != need) {
    return Status::Corruption("a record of " + std::to_string(record_bytes) + " bytes in " +
                              std::to_string(slots.size()) + " slots of " +
                              std::to_string(slot_bytes) + " bytes (" + std::to_string(need) +
                              " needed)");
  }
  for (SlotId s : slots) {
    if (s.value >= slot_count) {
      return Status::Corruption("slot " + std::to_string(s.value) + " is outside an arena of " +
                                std::to_string(slot_count) + " slots");
    }
  }
  return Status::Ok();
}

}  // namespace strata::pool
