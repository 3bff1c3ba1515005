#include "coordinator/pool/hashed_copy.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "store/base/assert.h"

namespace strata::pool {

void CopyHashed(std::span<std::byte> dst, std::span<const std::byte> src, HashPipeline& hash) {
  STRATA_ASSERT(dst.size() == src.size(), "CopyHashed needs equal sizes");
  for (size_t at = 0; at < src.size(); at += kHashedCopyPieceBytes) {
    const size_t n = std::min(kHashedCopyPieceBytes, src.size() - at);
    std::memcpy(dst.data() + at, src.data() + at, n);
    hash.Update(dst.subspan(at, n));
  }
}

Status CheckSlotsFit(std::span<const SlotId> slots, uint64_t record_bytes, uint64_t slot_bytes,
                     uint32_t slot_count) {
  if (slot_bytes == 0) return Status::Corruption("the arena has zero-byte slots");
  // Checked before rounding up: a size near 2^64 would wrap to few slots.
  if (record_bytes > slot_bytes * slot_count) {
    return Status::Corruption("a record of " + std::to_string(record_bytes) +
                              " bytes is larger than an arena of " + std::to_string(slot_count) +
                              " slots of " + std::to_string(slot_bytes) + " bytes");
  }
  const uint64_t need = record_bytes / slot_bytes + (record_bytes % slot_bytes != 0 ? 1 : 0);
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
  std::vector<uint32_t> sorted;
  sorted.reserve(slots.size());
  for (SlotId s : slots) sorted.push_back(s.value);
  std::sort(sorted.begin(), sorted.end());
  if (auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end()) {
    return Status::Corruption("slot " + std::to_string(*twice) + " is named twice");
  }
  return Status::Ok();
}

}  // namespace strata::pool
