// SimLocalTransport: rank zero's own share of the record jobs in the seeded
// simulation, a DiskTransport (the interface StagedTransport serves in
// production) over rank zero's SimDisk. Each job finishes a random disk time
// after it was submitted, on the simulation's clock.
#pragma once

#include <memory>

#include "store/tier/disk_transport.h"
#include "tests/sim/sim_disk.h"
#include "tests/sim/sim_network.h"
#include "tests/sim/sim_random.h"

namespace strata::sim {

class SimLocalTransport final : public DiskTransport {
 public:
  SimLocalTransport(SimDisk& disk, const SimNetwork& clock, SimRandom& random, SimTime disk_min,
                    SimTime disk_max)
      : disk_(disk), clock_(clock), random_(random), disk_min_(disk_min), disk_max_(disk_max) {}

  Status Submit(RecordJob job) override {
    if (closed_) return Status::Aborted("simulated local transport is closed");
    return disk_.Submit(job, clock_.now() + random_.Between(disk_min_, disk_max_));
  }
  void Poll(std::vector<RecordJobDone>& out) override {
    if (!closed_) disk_.Finish(clock_.now(), false, out);
  }
  // The simulation never sleeps: it advances its clock and polls.
  bool WaitForCompletion(std::chrono::milliseconds /*timeout*/) override { return false; }
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) override {
    signal_ = std::move(signal);
  }
  Status stopped() const override { return Status::Ok(); }
  // Finishes every accepted job now (their outcomes are not reported, as a
  // real transport's Close does not report them either).
  Status Close(std::chrono::milliseconds /*deadline*/) override {
    if (!closed_) {
      std::vector<RecordJobDone> ignored;
      disk_.Finish(clock_.now(), true, ignored);
    }
    closed_ = true;
    return Status::Ok();
  }
  // Rank zero was killed: the disk already crashed; nothing more runs.
  void MarkCrashed() { closed_ = true; }

 private:
  SimDisk& disk_;
  const SimNetwork& clock_;
  SimRandom& random_;
  SimTime disk_min_;
  SimTime disk_max_;
  std::shared_ptr<WakeSignal> signal_;
  bool closed_ = false;
};

}  // namespace strata::sim
