// A Transfers test double whose copies finish when the test says: it accepts
// every job, and the next Poll reports `finished` of them, oldest first.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <vector>

#include "store/transfer/transfers.h"

namespace strata::testing {

class ManualTransfers final : public Transfers {
 public:
  Status Submit(TransferJob job) override {
    accepted.push_back(job.id);
    return Status::Ok();
  }
  void Poll(std::vector<TransferCompletion>& out) override {
    for (; finished > 0 && !accepted.empty(); --finished) {
      out.push_back({accepted.front(), Status::Ok(), 1});
      accepted.pop_front();
    }
  }
  bool WaitForCompletion(std::chrono::milliseconds /*timeout*/) override { return finished > 0; }
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> /*signal*/) override {}
  Status Close(std::chrono::milliseconds /*deadline*/) override { return Status::Ok(); }
  uint32_t rank_count() const override { return 1; }

  std::deque<JobId> accepted;
  size_t finished = 0;  // how many of the accepted jobs the next Poll reports
};

}  // namespace strata::testing
