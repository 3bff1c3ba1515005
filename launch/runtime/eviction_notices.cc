#include "launch/runtime/eviction_notices.h"

namespace strata {

void EvictionNoticeQueue::Push(const EvictionNotice& notice) {
  if (queue_.size() == capacity_) {
    queue_.pop_front();
    lost_ = true;
    ++dropped_total_;
  }
  queue_.push_back(notice);
}

EvictionNoticeQueue::Batch EvictionNoticeQueue::Take() {
  Batch out{.notices = {queue_.begin(), queue_.end()}, .lost = lost_};
  queue_.clear();
  lost_ = false;
  return out;
}

}  // namespace strata
