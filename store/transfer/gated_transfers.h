// GatedTransfers: Transfers over planes that can go away — an attached
// runtime's memory (attach/), which its process may unshare at any time.
// While the gate is shut, Submit refuses every job; in_flight() counts the
// jobs accepted and not yet reported finished by Poll, so the owner of the
// planes unmaps them only once the gate is shut and nothing is in flight.
//
// Thread: Submit/Poll/Close on the transfers' owner thread (a rank agent's);
// Open/Shut/in_flight from any thread (the attach server's).
#pragma once

#include <memory>
#include <mutex>

#include "store/transfer/transfers.h"

namespace strata {

class GatedTransfers final : public Transfers {
 public:
  // Starts shut: no planes are there until a runtime attaches.
  explicit GatedTransfers(std::unique_ptr<Transfers> inner);

  // kUnavailable while shut (nothing queued); otherwise the inner answer.
  Status Submit(TransferJob job) override;
  void Poll(std::vector<TransferCompletion>& out) override;
  bool WaitForCompletion(std::chrono::milliseconds timeout) override;
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) override;
  Status Close(std::chrono::milliseconds deadline) override;
  uint32_t rank_count() const override { return inner_->rank_count(); }

  // The planes are mapped: jobs are accepted from now on.
  void Open();
  // The planes are going: no job is accepted from now on. Jobs already
  // accepted still run; wait for in_flight() == 0 before unmapping.
  void Shut();
  // Jobs accepted and not yet returned by Poll, plus copies entered and not
  // yet left.
  size_t in_flight() const;

  // For another copier over the same planes (the direct transport's record
  // jobs, store/tier/gated_disk_transport.h): Enter counts one copy in
  // flight, or refuses with kUnavailable while shut (nothing counted);
  // Leave ends one that Enter counted, once it no longer touches the planes.
  Status Enter();
  void Leave();

 private:
  std::unique_ptr<Transfers> inner_;
  mutable std::mutex mu_;  // guards open_ and in_flight_ against Shut/in_flight
  bool open_ = false;
  size_t in_flight_ = 0;
};

}  // namespace strata
