// SplitDiskTransport: the disk tier's transport when the direct transport
// runs (seed 2.6). Jobs on device planes (Submit: stores, fetches, and the
// truncates and unlinks) run on the DirectTransport, through cuFile between
// the record files and the GPU planes; jobs on host memory (SubmitHost: a
// composite's write_from of its memory slabs and read_into them) run on the
// StagedTransport's disk thread, because their bytes are already in host
// memory and the direct transport offers no host jobs. Both write the same
// record files (docs/formats.md), so either side reads what the other wrote.
//
// Order: each side runs its own jobs in submission order; there is no order
// between a device job and a host job. The disk tier (DiskFiles) never has
// two operations on one record file at once, so none is needed.
//
// Thread: the owner's, as DiskTransport. `keep_alive` (the cuFile library,
// CUDA contexts the direct side's seams use) is released after both
// transports are destroyed.
#pragma once

#include <memory>
#include <vector>

#include "store/tier/direct_transport.h"
#include "store/tier/staged_transport.h"

namespace strata {

class SplitDiskTransport final : public DiskTransport {
 public:
  SplitDiskTransport(std::unique_ptr<DirectTransport> direct,
                     std::unique_ptr<StagedTransport> staged,
                     std::vector<std::shared_ptr<void>> keep_alive = {});
  ~SplitDiskTransport() override;

  Status Submit(RecordJob job) override { return direct_->Submit(std::move(job)); }
  Status SubmitHost(const RecordJob& job, const HostBuffers& buffers) override {
    return staged_->SubmitHost(job, buffers);
  }
  // Seeds both sides (either may read a record the other wrote).
  void Seed(const ScanReport& report) override {
    direct_->Seed(report);
    staged_->Seed(report);
  }
  // Device jobs run on the direct side.
  bool device_jobs_stage() const override { return false; }
  void Poll(std::vector<RecordJobDone>& out) override;
  // Waits on one signal both sides raise.
  bool WaitForCompletion(std::chrono::milliseconds timeout) override;
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) override;
  Status stopped() const override;
  // Closes the direct side, then the staged side, within `deadline` each;
  // the first error is returned (memory must then stay alive).
  Status Close(std::chrono::milliseconds deadline) override;

  DirectStats direct_stats() const { return direct_->stats(); }
  const StagedStats& staged_stats() const { return staged_->stats(); }

 private:
  // Destroyed last: what the transports' seams use.
  std::vector<std::shared_ptr<void>> keep_alive_;
  std::unique_ptr<DirectTransport> direct_;
  std::unique_ptr<StagedTransport> staged_;
  std::shared_ptr<WakeSignal> signal_ = std::make_shared<WakeSignal>();
  std::vector<RecordJobDone> ready_;  // polled from a side, not yet handed out
};

}  // namespace strata
