// CopyPlanner: turns one batch of 1-D copy descriptors into the fewest copy
// operations the copy engines take.
//
//  - Pieces contiguous on both sides (device and host) become one 1-D copy.
//    With separate per-plane device allocations this never joins two pages of
//    a plane, because host page records interleave planes (record i holds
//    every plane of page i); it joins a page's planes when the runtime lays
//    them out page-major, and the pages of single-plane geometries.
//  - With CopyShape::kStrided, runs of equal-width pieces at constant device
//    and host strides become one 2-D copy: a plane's consecutive (or evenly
//    spaced) page ids landing in equally spaced page records.
//
// Copies in one batch are unordered and never overlap, so reordering them is
// safe. Pure: no driver calls, no clock, no allocation after warm-up.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "store/transfer/copy_engine.h"

namespace strata {

// One copy of `height` rows of `width` bytes; rows sit `device_pitch` and
// `host_pitch` bytes apart (a 1-D copy has height 1 and pitches equal to width).
struct CopyOp {
  uint64_t device = 0;
  uint8_t* host = nullptr;
  uint64_t width = 0;
  uint64_t height = 1;
  uint64_t device_pitch = 0;
  uint64_t host_pitch = 0;

  uint64_t bytes() const { return width * height; }
};

enum class CopyShape : unsigned char {
  kLinear,   // 1-D copies only (contiguous runs merged)
  kStrided,  // 1-D copies plus 2-D copies for strided runs
};

struct CopyPlanLimits {
  uint64_t max_pitch_bytes = uint64_t{1} << 31;  // the device's largest 2-D pitch
  uint64_t min_strided_rows = 4;                 // shorter runs stay 1-D
};

// Reused by one transfer thread for every batch; not thread-safe.
class CopyPlanner {
 public:
  // Replaces the current plan with one for `batch`.
  void Plan(std::span<const CopyDescriptor> batch, CopyShape shape, const CopyPlanLimits& limits);

  // 1-D copies (height 1).
  const std::vector<CopyOp>& linear() const { return linear_; }
  // 2-D copies (height >= min_strided_rows); empty for kLinear.
  const std::vector<CopyOp>& strided() const { return strided_; }
  uint64_t bytes() const;

 private:
  std::vector<uint32_t> order_;  // batch indices sorted by device address
  std::vector<CopyOp> linear_;
  std::vector<CopyOp> strided_;
};

}  // namespace strata
