// PlaneBases: where every rank's planes are, for the jobs submitted now.
// Most planes never move: ThreadedTransfers is given their addresses once.
// Memory shared by legacy CUDA IPC handles opens at an address the driver
// picks on each attach (cuda/imported_ipc_planes.h), so its importer is a
// PlaneBaseSource and the transfers read it per job.
//
// Contract: ThreadedTransfers reads current_bases() in Submit, and the job
// keeps that snapshot for its whole run, on every rank: a job always copies
// through the mapping of the attachment it was submitted under, never a
// later one's. The source's owner unmaps a snapshot's memory only once every
// job submitted over it has finished (the attach gate's drain,
// store/transfer/gated_transfers.h), and publishes a new snapshot only after
// mapping its memory.
#pragma once

#include <memory>
#include <vector>

#include "store/transfer/copy_engine.h"

namespace strata {

using PlaneBases = std::vector<RankPlanes>;  // one per rank, geometry order

class PlaneBaseSource {
 public:
  virtual ~PlaneBaseSource() = default;
  // The bases of the planes mapped now; null while none are (a Submit is
  // then refused). Thread: any (the source synchronises).
  virtual std::shared_ptr<const PlaneBases> current_bases() const = 0;
};

// Planes that never move (this process's own): always the same snapshot.
class FixedPlaneBases final : public PlaneBaseSource {
 public:
  explicit FixedPlaneBases(PlaneBases bases)
      : bases_(std::make_shared<const PlaneBases>(std::move(bases))) {}
  std::shared_ptr<const PlaneBases> current_bases() const override { return bases_; }

 private:
  std::shared_ptr<const PlaneBases> bases_;
};

}  // namespace strata
