// ThreadedTransfers: the Transfers implementation shared by the host and CUDA
// transports — one thread per rank with a bounded job channel, id-to-address
// expansion from the rank's geometry, batches of at most 16 MiB and 4,096
// entries through the rank's CopyEngine, and all-ranks aggregation: a job
// completes once every rank has finished it, with the first error.
//
// Jobs are pipelined per rank: a rank issues the next queued job's batches as
// soon as the previous job's are issued, and completes a job once the engine
// reports its last batch finished (CopyEngine::batches_in_flight), draining
// the engine only when its queue runs dry. Jobs of one rank are issued in
// submission order on the engine's streams, so a later job's copies never
// overtake an earlier one's. After a failed batch the engine has drained, and
// every job issued but not yet completed fails with that error.
//
// Plane addresses are fixed at Create, or (over a PlaneBaseSource) read once
// per job in Submit and kept by the job on every rank (plane_bases.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <thread>
#include <unordered_map>

#include "store/record/geometry.h"
#include "store/record/record_layout.h"
#include "store/transfer/copy_engine.h"
#include "store/transfer/plane_bases.h"
#include "store/transfer/transfers.h"

namespace strata {

struct ThreadedTransfersOptions {
  uint64_t queue_depth = 64;  // jobs queued per rank before Submit says kBusy
  bool low_priority = true;   // SCHED_BATCH + nice 10 on the rank threads
  // Bounds on the bytes per second each rank issues copying out of its
  // planes and restoring into them (transfer_pacer.h); 0: unbounded. A
  // rank's thread sleeps before a batch that would exceed its bound, so
  // jobs queue behind it. Copy-outs the host engine hashes as it copies
  // (no GPU) are not paced. Close lifts both: what is queued then drains
  // at full rate.
  uint64_t copy_out_bytes_per_s = 0;
  uint64_t restore_bytes_per_s = 0;
};

class ThreadedTransfers final : public Transfers {
 public:
  // One engine and one RankPlanes per rank of `geometry`. Threads start here;
  // an engine whose Start fails makes Create fail after every thread stopped.
  static Result<std::unique_ptr<ThreadedTransfers>> Create(
      const CacheGeometry& geometry, std::vector<RankPlanes> planes,
      std::vector<std::unique_ptr<CopyEngine>> engines, ThreadedTransfersOptions options = {});
  // Over planes that move per attachment: every job copies through the
  // bases `source` gave when it was submitted; Submit is refused
  // (kUnavailable) while the source has none. `source` must outlive the
  // transfers.
  static Result<std::unique_ptr<ThreadedTransfers>> Create(
      const CacheGeometry& geometry, const PlaneBaseSource& source,
      std::vector<std::unique_ptr<CopyEngine>> engines, ThreadedTransfersOptions options = {});
  ~ThreadedTransfers() override;

  Status Submit(TransferJob job) override;
  void Poll(std::vector<TransferCompletion>& out) override;
  bool WaitForCompletion(std::chrono::milliseconds timeout) override;
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) override;
  Status Close(std::chrono::milliseconds deadline) override;
  uint32_t rank_count() const override { return static_cast<uint32_t>(ranks_.size()); }

 private:
  struct Rank;
  // A job and the plane bases it copies through (plane_bases.h).
  struct BoundJob {
    TransferJob job;
    std::shared_ptr<const PlaneBases> bases;
  };
  struct Pending {
    uint32_t ranks_left;
    Status status;
    uint64_t bytes = 0;
  };
  // What one rank's run of a job produced.
  struct RankResult {
    uint64_t bytes = 0;
    std::vector<uint64_t> page_sums;  // hash_records jobs hashed on this rank
    std::optional<uint64_t> row_sum;
  };
  ThreadedTransfers(const CacheGeometry& geometry, ThreadedTransfersOptions options);
  static Result<std::unique_ptr<ThreadedTransfers>> Start(
      const CacheGeometry& geometry, std::vector<std::unique_ptr<CopyEngine>> engines,
      ThreadedTransfersOptions options, std::shared_ptr<const PlaneBases> fixed,
      const PlaneBaseSource* source);
  // Plane counts match the geometry's, one set per rank.
  Status CheckBases(const PlaneBases& bases) const;
  struct Issued;  // a job whose batches are issued (threaded_transfers.cc)
  void RunRank(uint32_t rank);
  // Issues `job`'s batches on the rank's engine, counting them in `batches`.
  Status RunJob(uint32_t rank, const BoundJob& bound, RankResult& result, uint64_t& batches);
  // Completes the first `count` of `issued` with `status` (OK: each one's own).
  void CompleteIssued(Rank& r, std::deque<Issued>& issued, size_t count, const Status& status);
  void Finish(JobId id, const Status& status, RankResult result);
  bool AllRanksExited() REQUIRES(mu_);

  CacheGeometry geometry_;
  RecordLayout layout_;
  ThreadedTransfersOptions options_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::shared_ptr<const PlaneBases> fixed_;  // the bases when there is no source
  const PlaneBaseSource* source_ = nullptr;  // null: fixed_

  // Also guards each Rank's queue and exited flag (threaded_transfers.cc).
  Mutex mu_;
  CondVar done_cv_;
  std::shared_ptr<WakeSignal> signal_ GUARDED_BY(mu_);  // the owner's, notified with done_cv_
  std::unordered_map<JobId, Pending> pending_ GUARDED_BY(mu_);
  std::vector<TransferCompletion> done_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  // Set by Close: queued jobs drain at full rate, past any copy bound.
  std::atomic<bool> unpaced_{false};
  bool closed_ = false;
};

}  // namespace strata
