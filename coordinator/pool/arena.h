// Arena: the pool's shared host memory (seed 2.15): one memfd, mapped
// MAP_SHARED, divided into equal record slots. The manager creates it; an
// instance on the same host maps the same fd (passed over the control
// socket), so a put writes straight into the slots a later claim reads.
//
// Huge pages are used where the kernel has them (MFD_HUGETLB, 2 MiB, when the
// slot size is a multiple of 2 MiB); otherwise ordinary pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "coordinator/pool/slot_table.h"
#include "store/base/status.h"
#include "wire/unique_fd.h"

namespace strata::pool {

inline constexpr uint64_t kHugePageBytes = 2ull << 20;

enum class PageKind : uint8_t { kOrdinary, kHuge };
// Whether Create may try huge pages (tests that count pages ask for kOrdinary).
enum class HugePages : uint8_t { kIfAvailable, kNever };

class Arena {
 public:
  // slot_bytes > 0 and a multiple of 4096; slot_count > 0.
  static Result<std::unique_ptr<Arena>> Create(const std::string& name, uint64_t slot_bytes,
                                               uint32_t slot_count, HugePages huge);
  // Maps an arena another process created (its fd and geometry from Hello).
  // Takes the fd. kInvalidArgument when the fd is smaller than the geometry.
  static Result<std::unique_ptr<Arena>> Map(wire::UniqueFd fd, uint64_t slot_bytes,
                                            uint32_t slot_count);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  int fd() const { return fd_.get(); }
  uint64_t slot_bytes() const { return slot_bytes_; }
  uint32_t slot_count() const { return slot_count_; }
  uint64_t bytes() const { return slot_bytes_ * slot_count_; }
  // Where the mapping starts (what a host registration covers).
  std::byte* base() const { return base_; }
  // What Create obtained; a mapped arena (Map) reads kOrdinary: only its
  // creator knows.
  PageKind page_kind() const { return page_kind_; }

  // The bytes of one slot. Out of range is a bug.
  std::span<std::byte> Slot(SlotId slot) const;

 private:
  Arena(wire::UniqueFd fd, std::byte* base, uint64_t slot_bytes, uint32_t slot_count, PageKind kind)
      : fd_(std::move(fd)),
        base_(base),
        slot_bytes_(slot_bytes),
        slot_count_(slot_count),
        page_kind_(kind) {}

  wire::UniqueFd fd_;
  std::byte* base_;
  uint64_t slot_bytes_;
  uint32_t slot_count_;
  PageKind page_kind_;
};

}  // namespace strata::pool
