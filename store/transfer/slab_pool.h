// SlabPool: one 4 KiB-aligned anonymous mapping of equal page-record-sized
// slots with a free list (seed 2.5). The memory store and the staged disk
// transport share it; there is no separate staging pool.
//
// Thread: one caller at a time, the store's thread (on a peer rank, whichever
// thread holds its agent's serving state). Allocation never blocks: an
// unsatisfiable request fails at once. Slot memory itself is written by
// transfer and disk threads while the store holds the slot.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "store/base/ids.h"
#include "store/base/status.h"

namespace strata {

using SlotId = StrongId<struct SlotIdTag, uint32_t>;

// Registers host memory with a device driver (pinning it for DMA); the CUDA
// module implements it with cuMemHostRegister. Without one, the pool is plain
// memory. Called once per pool, at creation and destruction.
class HostRegistrar {
 public:
  virtual ~HostRegistrar() = default;
  virtual Status Register(void* base, uint64_t bytes) = 0;
  virtual Status Unregister(void* base) = 0;
  // Whether devices address registered `base` at its host address (what a
  // region shared by address, such as a pool's arena, needs: seed 2.15).
  // kFailedPrecondition naming both addresses when not. Default: host-only
  // registrars have nothing else to address it by.
  virtual Status CheckSameAddress(void* /*base*/) const { return Status::Ok(); }
};

// How many intake slots the automatic reservation wants (seed 1 and 2.11).
struct IntakePlan {
  uint64_t full_slots = 0;     // 2 * max_active * row_slots + 2 * kWindowPages
  uint64_t minimum_slots = 0;  // 2 * (kWindowPages + row_slots): two complete windows
  uint64_t slots = 0;          // what fits: full, or shrunk toward minimum
  bool shrunk = false;         // host headroom could not hold the full intake
  std::string warning;         // one line naming the memory full intake needs
};
inline constexpr uint64_t kWindowPages = 64;

// Pure sizing: `headroom_bytes` is what the host can spare for intake.
IntakePlan PlanIntake(uint64_t max_active, uint64_t row_slots, uint64_t slot_bytes,
                      uint64_t headroom_bytes);

// Slots a row segment of `row_segment_bytes` occupies (at least one).
uint64_t RowSlots(uint64_t row_segment_bytes, uint64_t slot_bytes);

class SlabPool {
 public:
  // Maps `warm_slots + intake_slots` slots of `slot_bytes` (rounded up to
  // 4 KiB), advised for transparent huge pages and populated for writing
  // (MADV_POPULATE_WRITE, or a touch of every page before Linux 5.14), and
  // registers the mapping with `registrar` when one is given (not owned; it
  // must outlive the pool).
  static Result<std::unique_ptr<SlabPool>> Create(uint64_t slot_bytes, uint64_t warm_slots,
                                                  uint64_t intake_slots,
                                                  HostRegistrar* registrar = nullptr);
  ~SlabPool();
  SlabPool(const SlabPool&) = delete;
  SlabPool& operator=(const SlabPool&) = delete;

  // Allocates `count` slots, all or nothing, only if at least `keep_free`
  // slots stay free afterwards. Appends to `out`. Never blocks.
  bool Allocate(uint64_t count, uint64_t keep_free, std::vector<SlotId>& out);
  void Free(SlotId slot);
  void Free(const std::vector<SlotId>& slots);

  uint8_t* address(SlotId slot) const;
  uint64_t slot_bytes() const { return slot_bytes_; }
  uint64_t total_slots() const { return total_slots_; }
  uint64_t intake_slots() const { return intake_slots_; }
  uint64_t free_slots() const { return free_.size(); }
  uint64_t used_slots() const { return total_slots_ - free_.size(); }
  bool registered() const { return registrar_ != nullptr; }

  // Keeps the mapping (and its registration) alive past destruction: used when
  // a copier could not drain and may still write into it (seed 2.5).
  void Leak() { leaked_ = true; }

 private:
  SlabPool() = default;
  uint8_t* base_ = nullptr;
  uint64_t mapped_bytes_ = 0;
  uint64_t slot_bytes_ = 0;
  uint64_t total_slots_ = 0;
  uint64_t intake_slots_ = 0;
  std::vector<SlotId> free_;   // LIFO: recently freed slots are warm in cache
  std::vector<bool> is_free_;  // double-free detection
  HostRegistrar* registrar_ = nullptr;
  bool leaked_ = false;
};

}  // namespace strata
