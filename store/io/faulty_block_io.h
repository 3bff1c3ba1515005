// FaultyBlockIo: a BlockIo decorator that applies a FaultPlan to the requests
// it forwards (fault-injection tests; the io_uring BlockIo underneath stays
// the production path). A failing request never reaches the inner BlockIo:
// it completes with -errno on the next Reap. A short read or write runs in
// full underneath and then completes with fewer bytes (half, rounded down to
// 4 KiB so that an O_DIRECT resubmission of the rest stays aligned; requests
// under 8 KiB are never shortened). Thread: the owner's, like any BlockIo;
// Wake from any thread. `counters` must outlive it.
#pragma once

#include <deque>
#include <memory>
#include <unordered_map>

#include "store/io/block_io.h"
#include "store/io/fault_plan.h"

namespace strata {

class FaultyBlockIo final : public BlockIo {
 public:
  FaultyBlockIo(std::unique_ptr<BlockIo> inner, FaultPlan plan, FaultCounters& counters)
      : inner_(std::move(inner)), plan_(std::move(plan)), counters_(counters) {}

  uint32_t capacity() const override { return inner_->capacity(); }
  Status Submit(std::span<const BlockRequest> requests) override;
  Result<size_t> Reap(std::span<BlockCompletion> out, std::chrono::nanoseconds max_wait) override;
  void Wake() override { inner_->Wake(); }

 private:
  std::unique_ptr<BlockIo> inner_;
  const FaultPlan plan_;
  FaultCounters& counters_;
  std::deque<BlockCompletion> injected_;             // failed requests, not yet reaped
  std::unordered_map<uint64_t, int64_t> shortened_;  // tag -> bytes its completion reports
};

}  // namespace strata
