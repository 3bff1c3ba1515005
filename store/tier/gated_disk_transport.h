// GatedDiskTransport: a DiskTransport whose record jobs copy straight
// between record files and planes that can go away (an attached runtime's
// memory, through the direct transport, seed 2.6 and 2.14), counted in the
// same gate as the transfers over those planes
// (store/transfer/gated_transfers.h). A store or fetch enters the gate at
// Submit (kUnavailable while it is shut, nothing queued) and leaves it when
// Poll reports the job, so the attach server unmaps the planes only once
// these jobs finished too. Truncates, unlinks and host jobs touch no planes
// and pass straight through.
//
// Close polls what finished while the inner transport drained, so those
// jobs leave the gate (and are handed out by the next Poll). A job the
// inner transport never reports (its Close timed out) keeps its count: the
// planes then stay mapped, never unmapped under a copy.
//
// Thread: the owner's, as DiskTransport; the gate is opened and shut from
// the attach server's.
#pragma once

#include <memory>
#include <unordered_set>
#include <vector>

#include "store/tier/disk_transport.h"
#include "store/transfer/gated_transfers.h"

namespace strata {

class GatedDiskTransport final : public DiskTransport {
 public:
  // `gate` is owned by `inner` (the staged side's transfers) or outlives
  // it; the destructor never touches it.
  GatedDiskTransport(std::unique_ptr<DiskTransport> inner, GatedTransfers& gate);

  // kInvalidArgument for a store or fetch whose id is already in flight.
  Status Submit(RecordJob job) override;
  Status SubmitHost(const RecordJob& job, const HostBuffers& buffers) override {
    return inner_->SubmitHost(job, buffers);
  }
  void Seed(const ScanReport& report) override { inner_->Seed(report); }
  bool device_jobs_stage() const override { return inner_->device_jobs_stage(); }
  void Poll(std::vector<RecordJobDone>& out) override;
  bool WaitForCompletion(std::chrono::milliseconds timeout) override {
    return inner_->WaitForCompletion(timeout);
  }
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) override {
    inner_->NotifyOnCompletion(std::move(signal));
  }
  Status stopped() const override { return inner_->stopped(); }
  Status Close(std::chrono::milliseconds deadline) override;

  // Stores and fetches accepted and not yet reported.
  size_t entered() const { return entered_.size(); }

 private:
  // Reports out of the inner Poll: leaves the gate for those that entered.
  void Settle(std::vector<RecordJobDone>& done, size_t from);

  std::unique_ptr<DiskTransport> inner_;
  GatedTransfers& gate_;
  std::unordered_set<uint64_t> entered_;  // job ids holding the gate
  std::vector<RecordJobDone> kept_;       // polled by Close, handed out by Poll
};

}  // namespace strata
