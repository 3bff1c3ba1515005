#include "store/transfer/slab_pool.h"

#include <sys/mman.h>

#include <cerrno>

#include "store/record/record_layout.h"

namespace strata {

namespace {
#ifdef MADV_POPULATE_WRITE
constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kPopulateWrite = 23;  // Linux 5.14 uapi value
#endif
}  // namespace

IntakePlan PlanIntake(uint64_t max_active, uint64_t row_slots, uint64_t slot_bytes,
                      uint64_t headroom_bytes) {
  IntakePlan p;
  p.full_slots = 2 * max_active * row_slots + 2 * kWindowPages;
  p.minimum_slots = 2 * (kWindowPages + row_slots);
  p.slots = p.full_slots;
  if (slot_bytes > 0 && p.full_slots * slot_bytes > headroom_bytes) {
    p.slots = std::max(p.minimum_slots, std::min(p.full_slots, headroom_bytes / slot_bytes));
    p.shrunk = p.slots < p.full_slots;
  }
  if (p.shrunk) {
    p.warning = "host headroom holds " + std::to_string(headroom_bytes >> 20) +
                " MiB; full intake needs " + std::to_string((p.full_slots * slot_bytes) >> 20) +
                " MiB (" + std::to_string(p.full_slots) + " slots); using " +
                std::to_string(p.slots) + " slots";
  }
  return p;
}

uint64_t RowSlots(uint64_t row_segment_bytes, uint64_t slot_bytes) {
  STRATA_ASSERT(slot_bytes > 0, "slot_bytes must be positive");
  return std::max<uint64_t>(1, (row_segment_bytes + slot_bytes - 1) / slot_bytes);
}

Result<std::unique_ptr<SlabPool>> SlabPool::Create(uint64_t slot_bytes, uint64_t warm_slots,
                                                   uint64_t intake_slots,
                                                   HostRegistrar* registrar) {
  if (slot_bytes == 0) return Status::InvalidArgument("slab slot size must be positive");
  uint64_t total = warm_slots + intake_slots;
  if (total == 0) return Status::InvalidArgument("slab pool needs at least one slot");
  if (total > UINT32_MAX) return Status::InvalidArgument("slab pool has too many slots");
  std::unique_ptr<SlabPool> pool(new SlabPool());
  pool->slot_bytes_ = AlignUp(slot_bytes);
  pool->total_slots_ = total;
  pool->intake_slots_ = intake_slots;
  pool->mapped_bytes_ = pool->slot_bytes_ * total;
  void* p = mmap(nullptr, pool->mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) {
    return Status::FromErrno(
        errno, "mapping a slab pool of " + std::to_string(pool->mapped_bytes_ >> 20) + " MiB");
  }
  pool->base_ = static_cast<uint8_t*>(p);
  (void)madvise(p, pool->mapped_bytes_, MADV_HUGEPAGE);  // advisory: THP may be off
  // Populate for writing, after the huge-page advice: MAP_POPULATE may map
  // the shared zero page, leaving every first copy-out to fault (measured at
  // 0.4 GB/s on the development VM).
  if (madvise(p, pool->mapped_bytes_, kPopulateWrite) != 0) {
    if (errno != EINVAL) {
      const int err = errno;
      munmap(p, pool->mapped_bytes_);
      pool->base_ = nullptr;
      return Status::FromErrno(
          err, "populating a slab pool of " + std::to_string(pool->mapped_bytes_ >> 20) + " MiB");
    }
    for (uint64_t off = 0; off < pool->mapped_bytes_; off += kRecordAlign) {
      static_cast<volatile uint8_t*>(p)[off] = 0;  // kernels before 5.14
    }
  }
  if (registrar != nullptr) {
    Status s = registrar->Register(p, pool->mapped_bytes_);
    if (!s.ok()) return s.WithContext("registering the slab pool");
    pool->registrar_ = registrar;
  }
  pool->free_.reserve(total);
  for (uint64_t i = total; i-- > 0;) pool->free_.push_back(SlotId(static_cast<uint32_t>(i)));
  pool->is_free_.assign(total, true);
  return pool;
}

SlabPool::~SlabPool() {
  if (base_ == nullptr || leaked_) return;
  if (registrar_ != nullptr) (void)registrar_->Unregister(base_);
  munmap(base_, mapped_bytes_);
}

bool SlabPool::Allocate(uint64_t count, uint64_t keep_free, std::vector<SlotId>& out) {
  if (free_.size() < count || free_.size() - count < keep_free) return false;
  for (uint64_t i = 0; i < count; ++i) {
    SlotId s = free_.back();
    free_.pop_back();
    is_free_[s.value] = false;
    out.push_back(s);
  }
  return true;
}

void SlabPool::Free(SlotId slot) {
  STRATA_ASSERT(slot.value < total_slots_, "freeing a slot outside the pool");
  STRATA_ASSERT(!is_free_[slot.value], "double free of a slab slot");
  is_free_[slot.value] = true;
  free_.push_back(slot);
}

void SlabPool::Free(const std::vector<SlotId>& slots) {
  for (SlotId s : slots) Free(s);
}

uint8_t* SlabPool::address(SlotId slot) const {
  STRATA_ASSERT(slot.value < total_slots_, "slot outside the pool");
  return base_ + slot_bytes_ * slot.value;
}

}  // namespace strata
