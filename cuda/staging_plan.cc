#include "cuda/staging_plan.h"

#include <algorithm>
#include <numeric>

namespace strata {

namespace {

uint64_t HostAddress(const uint8_t* p) { return reinterpret_cast<uint64_t>(p); }

uint64_t AlignUpTo(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

uint64_t StagingWindowBytes(uint64_t batch_bytes, uint64_t entries) {
  return batch_bytes + entries * kStagingExtentAlignment;
}

uint64_t MaxStagedPieces(uint64_t batch_bytes, uint64_t entries, const StagingLimits& limits) {
  // Each entry adds at most one piece beyond its share of whole kernel pieces,
  // and each stage boundary cuts at most one more.
  const uint64_t stages = StagingWindowBytes(batch_bytes, entries) / limits.stage_bytes + 1;
  return batch_bytes / limits.kernel_piece_bytes + entries + stages;
}

void StagingPlanner::Clear() {
  pieces_.clear();
  extents_.clear();
  stages_.clear();
  direct_.clear();
  window_used_ = 0;
}

Status StagingPlanner::Plan(std::span<const CopyDescriptor> batch, const StagingLimits& limits) {
  Clear();
  if (limits.window_bytes == 0 || limits.stage_bytes == 0 || limits.kernel_piece_bytes == 0) {
    return Status::InvalidArgument("staging limits must be positive");
  }
  order_.resize(batch.size());
  std::iota(order_.begin(), order_.end(), 0u);
  // A transfer thread lists pieces page by page, records in host order, so
  // a batch usually arrives sorted: checking first saves the sort, a tenth
  // of a 4 KiB-piece batch's DMA time on the thread that feeds the bus.
  const auto by_host = [&](uint32_t a, uint32_t b) {
    return HostAddress(batch[a].host) < HostAddress(batch[b].host);
  };
  if (!std::is_sorted(order_.begin(), order_.end(), by_host)) {
    std::sort(order_.begin(), order_.end(), by_host);
  }
  uint64_t w = 0;             // next free window offset
  uint64_t host_end = 0;      // host end of the previous piece
  uint64_t stage = ~0ull;     // index of the stage being filled
  bool after_direct = false;  // the previous piece bypassed the window
  for (size_t i = 0; i < order_.size(); ++i) {
    const CopyDescriptor& d = batch[order_[i]];
    if (d.bytes == 0) return Status::InvalidArgument("staged copy of an empty piece");
    const uint64_t host = HostAddress(d.host);
    if (i > 0 && host < host_end) {
      return Status::InvalidArgument("staged batch has pieces overlapping on the host side");
    }
    const bool touches = i > 0 && !after_direct && host == host_end;
    host_end = host + d.bytes;
    if (limits.direct_piece_bytes != 0 && d.bytes >= limits.direct_piece_bytes) {
      direct_.push_back(d);
      after_direct = true;
      continue;
    }
    after_direct = false;
    // A gap on the host side (or the first piece, or one after a direct
    // piece) starts a new extent at an aligned window offset; touching pieces
    // continue the extent.
    if (!touches) w = AlignUpTo(w, kStagingExtentAlignment);
    uint64_t done = 0;
    while (done < d.bytes) {
      const uint64_t s = w / limits.stage_bytes;
      const uint64_t n =
          std::min({d.bytes - done, (s + 1) * limits.stage_bytes - w, limits.kernel_piece_bytes});
      if (w + n > limits.window_bytes) {
        return Status::InvalidArgument("staged batch needs more than the " +
                                       std::to_string(limits.window_bytes) + "-byte window");
      }
      if (s != stage) {
        stages_.push_back(
            {static_cast<uint32_t>(pieces_.size()), 0, static_cast<uint32_t>(extents_.size()), 0});
        stage = s;
      }
      pieces_.push_back({d.device + done, w, n});
      StagingStage& st = stages_.back();
      const bool extend = (touches || done > 0) && extents_.size() > st.first_extent &&
                          HostAddress(extents_.back().host) + extents_.back().bytes == host + done;
      if (extend) {
        extents_.back().bytes += n;
      } else {
        extents_.push_back({d.host + done, w, n});
      }
      done += n;
      w += n;
    }
  }
  for (size_t k = 0; k < stages_.size(); ++k) {
    const bool last = k + 1 == stages_.size();
    StagingStage& st = stages_[k];
    st.piece_count = static_cast<uint32_t>((last ? pieces_.size() : stages_[k + 1].first_piece) -
                                           st.first_piece);
    st.extent_count = static_cast<uint32_t>((last ? extents_.size() : stages_[k + 1].first_extent) -
                                            st.first_extent);
  }
  window_used_ = w;
  return Status::Ok();
}

}  // namespace strata
