// EvictionNoticeQueue: the runtime's bounded queue of retired checkpoints
// (seed 2.15, "Evictions"), handed to the store before its next store call.
// When full, a new notice drops the oldest; the next Take reports that
// notices were lost, once however many were dropped, so the runtime calls
// HostStore::EvictionsLost once per overflow. Pure: no store calls here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "store/tier/export_hooks.h"

namespace strata {

class EvictionNoticeQueue {
 public:
  // At least one notice is kept (a capacity of 0 is taken as 1).
  explicit EvictionNoticeQueue(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  void Push(const EvictionNotice& notice);

  struct Batch {
    std::vector<EvictionNotice> notices;  // oldest first
    bool lost = false;                    // notices were dropped since the last Take
  };
  // Everything queued, and whether an overflow happened since the last Take;
  // leaves the queue empty.
  Batch Take();

  // Nothing to hand over: no notice and no loss.
  bool idle() const { return queue_.empty() && !lost_; }
  size_t capacity() const { return capacity_; }
  uint64_t dropped_total() const { return dropped_total_; }

 private:
  size_t capacity_;
  std::deque<EvictionNotice> queue_;
  bool lost_ = false;
  uint64_t dropped_total_ = 0;
};

}  // namespace strata
