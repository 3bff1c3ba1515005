// StagingPlanner: how one batch of copy descriptors moves through a device
// staging window (CopyMethod::kStaged).
//
// The window is laid out like the batch's host destination: pieces sorted by
// host address and packed in that order, so every run of pieces contiguous on
// the host is also contiguous in the window and moves with ONE DMA (an
// extent). A gather kernel packs the pieces into the window before the DMA to
// the host (copy-out); after the DMA from the host a scatter kernel unpacks
// them (restore).
//
// Safety contract: the DMAs touch exactly the batch's host bytes. Extents are
// only ever merged across pieces that touch (no gap in between), never across
// a gap, so host bytes between pieces (another record, padding the CPU
// zeroes) are never written by a DMA. Pieces overlapping on the host side are
// refused.
//
// The window is cut into stages of at most `stage_bytes`: each stage is one
// kernel launch and its own DMAs, so the kernel of stage k + 1 runs while the
// DMA of stage k moves (and a job's last kernel is short). Kernel pieces are
// cut to at most `kernel_piece_bytes`, so one warp per piece keeps every warp
// busy whatever the plane size. Each extent starts at a 256-byte aligned
// window offset.
//
// Pieces of at least `direct_piece_bytes` are not staged: they are listed in
// direct() (in host order) for DMA straight between plane and host, which
// costs no SM time and no second pass over HBM, and reaches the bus on its own
// for large pieces.
//
// Pure: no driver calls, no clock; one planner per transfer thread, reused for
// every batch (not thread-safe).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "store/base/status.h"
#include "store/transfer/copy_engine.h"

namespace strata {

struct StagingLimits {
  uint64_t window_bytes = 0;                  // one window's capacity
  uint64_t stage_bytes = 2ull << 20;          // window bytes per kernel launch
  uint64_t kernel_piece_bytes = 16ull << 10;  // bytes per warp task
  // Pieces of at least this many bytes bypass the window: one DMA each,
  // straight between the plane and the host (0: every piece is staged).
  uint64_t direct_piece_bytes = 0;
};

inline constexpr uint64_t kStagingExtentAlignment = 256;

// One kernel task: `bytes` between device address `device` (a plane) and
// window offset `window`.
struct StagedPiece {
  uint64_t device = 0;
  uint64_t window = 0;
  uint64_t bytes = 0;
};

// One DMA: `bytes` between host memory `host` and window offset `window`.
struct StagedExtent {
  uint8_t* host = nullptr;
  uint64_t window = 0;
  uint64_t bytes = 0;
};

// One kernel launch and its DMAs: pieces [first_piece, first_piece +
// piece_count) and extents [first_extent, first_extent + extent_count).
struct StagingStage {
  uint32_t first_piece = 0;
  uint32_t piece_count = 0;
  uint32_t first_extent = 0;
  uint32_t extent_count = 0;
};

// The window bytes a batch of `batch_bytes` in at most `entries` pieces may
// need (payload plus alignment of every extent start).
uint64_t StagingWindowBytes(uint64_t batch_bytes, uint64_t entries);
// The most kernel pieces a plan under `limits` can hold for such a batch.
uint64_t MaxStagedPieces(uint64_t batch_bytes, uint64_t entries, const StagingLimits& limits);

class StagingPlanner {
 public:
  // Replaces the plan with one for `batch`. kInvalidArgument when pieces
  // overlap on the host side, a piece is empty, the limits are zero, or the
  // batch does not fit the window.
  Status Plan(std::span<const CopyDescriptor> batch, const StagingLimits& limits);

  const std::vector<StagedPiece>& pieces() const { return pieces_; }
  const std::vector<StagedExtent>& extents() const { return extents_; }
  const std::vector<StagingStage>& stages() const { return stages_; }
  const std::vector<CopyDescriptor>& direct() const { return direct_; }
  uint64_t window_used() const { return window_used_; }  // bytes up to the last extent's end

 private:
  void Clear();
  std::vector<uint32_t> order_;  // batch indices sorted by host address
  std::vector<StagedPiece> pieces_;
  std::vector<StagedExtent> extents_;
  std::vector<StagingStage> stages_;
  std::vector<CopyDescriptor> direct_;
  uint64_t window_used_ = 0;
};

}  // namespace strata
