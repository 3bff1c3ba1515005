// The memory `strata bench disk` writes from and reads into (bench_disk.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "store/base/ids.h"
#include "store/base/status.h"
#include "store/transfer/slab_pool.h"

namespace strata {

// Slab memory: equal page-record-sized slots of one SlabPool mapping (huge
// pages advised, as the staging slabs the disk thread writes from and reads
// into), handed out in a scrambled order so a record's pieces are not
// contiguous.
class SlotPool {
 public:
  static Result<std::unique_ptr<SlotPool>> Create(uint64_t slot_bytes, uint64_t slots) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<SlabPool> slabs,
                            SlabPool::Create(slot_bytes, slots, 0));
    return std::unique_ptr<SlotPool>(new SlotPool(std::move(slabs)));
  }
  std::byte* slot(uint64_t i) const { return base_ + order_[i] * slot_bytes_; }
  std::span<std::byte> memory() const { return {base_, slot_bytes_ * order_.size()}; }
  void Leak() { slabs_->Leak(); }

 private:
  explicit SlotPool(std::unique_ptr<SlabPool> slabs)
      : slabs_(std::move(slabs)),
        base_(reinterpret_cast<std::byte*>(slabs_->address(SlotId(0)))),
        slot_bytes_(slabs_->slot_bytes()) {
    const uint64_t slots = slabs_->total_slots();
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    auto* words = reinterpret_cast<uint64_t*>(base_);
    for (uint64_t i = 0; i < slot_bytes_ * slots / 8; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      words[i] = x;
    }
    // A stride coprime with the slot count visits every slot once.
    uint64_t stride = 7919;
    while (std::gcd(stride, slots) != 1) stride += 2;
    for (uint64_t i = 0; i < slots; ++i) order_.push_back(i * stride % slots);
  }

  std::unique_ptr<SlabPool> slabs_;
  std::byte* base_;
  uint64_t slot_bytes_;
  std::vector<uint64_t> order_;
};

}  // namespace strata
