#include "cuda/copy_plan.h"

#include <algorithm>
#include <numeric>

namespace strata {

namespace {

uint64_t HostAddress(const CopyDescriptor& d) { return reinterpret_cast<uint64_t>(d.host); }

bool Contiguous(const CopyDescriptor& next, uint64_t device_end, uint64_t host_end) {
  return next.device == device_end && HostAddress(next) == host_end;
}

}  // namespace

void CopyPlanner::Plan(std::span<const CopyDescriptor> batch, CopyShape shape,
                       const CopyPlanLimits& limits) {
  linear_.clear();
  strided_.clear();
  order_.resize(batch.size());
  std::iota(order_.begin(), order_.end(), 0u);
  std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
    if (batch[a].device != batch[b].device) return batch[a].device < batch[b].device;
    return HostAddress(batch[a]) < HostAddress(batch[b]);
  });
  const size_t n = order_.size();
  size_t i = 0;
  while (i < n) {
    const CopyDescriptor& first = batch[order_[i]];
    // A run contiguous on both sides: one 1-D copy.
    uint64_t width = first.bytes;
    size_t j = i + 1;
    while (j < n &&
           Contiguous(batch[order_[j]], first.device + width, HostAddress(first) + width)) {
      width += batch[order_[j]].bytes;
      ++j;
    }
    if (j > i + 1) {
      linear_.push_back({first.device, first.host, width, 1, width, width});
      i = j;
      continue;
    }
    // A run of equal widths at constant positive strides: one 2-D copy.
    if (shape == CopyShape::kStrided && j < n) {
      const CopyDescriptor& second = batch[order_[j]];
      const uint64_t device_pitch = second.device - first.device;
      const uint64_t host_pitch = HostAddress(second) - HostAddress(first);
      const bool usable = second.bytes == first.bytes && second.device > first.device &&
                          HostAddress(second) > HostAddress(first) && device_pitch >= first.bytes &&
                          host_pitch >= first.bytes && device_pitch <= limits.max_pitch_bytes &&
                          host_pitch <= limits.max_pitch_bytes;
      if (usable) {
        size_t k = j + 1;
        while (k < n) {
          const CopyDescriptor& prev = batch[order_[k - 1]];
          const CopyDescriptor& next = batch[order_[k]];
          if (next.bytes != first.bytes || next.device != prev.device + device_pitch ||
              HostAddress(next) != HostAddress(prev) + host_pitch) {
            break;
          }
          ++k;
        }
        if (k - i >= limits.min_strided_rows) {
          strided_.push_back(
              {first.device, first.host, first.bytes, k - i, device_pitch, host_pitch});
          i = k;
          continue;
        }
      }
    }
    linear_.push_back({first.device, first.host, first.bytes, 1, first.bytes, first.bytes});
    ++i;
  }
}

uint64_t CopyPlanner::bytes() const {
  uint64_t total = 0;
  for (const CopyOp& op : linear_) total += op.bytes();
  for (const CopyOp& op : strided_) total += op.bytes();
  return total;
}

}  // namespace strata
