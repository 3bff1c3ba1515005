// SimAgent: a peer rank in the seeded simulation. It runs RankAgent's own
// serving rules (rank_agent/serving_rules.h: hold, busy, drain, the
// answers) over the rank's SimDisk and the simulated link, in place of
// RankAgent's staged transport and wire::Link: each Job from rank zero runs
// on the disk and is answered with JobDone; Drain is answered with Drained
// once nothing is held or running; a session that ends (Close, a lost link)
// drops held jobs and lets running ones land, unanswered. A crash (SIGKILL)
// resets the link and leaves each running job whole or absent.
//
// `planted_bug` swaps in a deliberately wrong ServingRules for the
// simulation's own tests (planted_bug_rules.h), which the invariants must
// catch.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "rank_agent/serving_rules.h"
#include "tests/sim/planted_bug_rules.h"
#include "tests/sim/sim_disk.h"
#include "tests/sim/sim_network.h"
#include "tests/sim/sim_random.h"

namespace strata::sim {

struct SimAgentOptions {
  size_t held_max = 8;
  SimTime disk_min = 100;  // a job's disk time, microseconds
  SimTime disk_max = 3000;
  PlantedBug planted_bug = PlantedBug::kNone;
};

class SimAgent {
 public:
  SimAgent(RankId rank, SimDisk& disk, SimNetwork& net, SimRandom& random, SimAgentOptions options);

  // One turn at the network's current time: reads what arrived (unless it
  // stopped reading or its session ended), runs held jobs, answers finished
  // ones. `all` finishes every accepted job now (a drain that must end
  // within this turn).
  // Errors: a frame that did not decode (a codec bug).
  Status Step(bool all);
  // SIGKILL: the link resets, running jobs end whole or absent.
  void Crash();
  // Sends rank zero a message the protocol forbids (a JobDone for a job it
  // already answered or never got, one naming another rank, or a message
  // only rank zero sends): rank zero must stop its transport.
  void SendHostile();
  // Stops reading its link until `until`.
  void StallUntil(SimTime until) { stalled_until_ = until; }

  bool stalled() const { return net_.now() < stalled_until_; }
  bool crashed() const { return crashed_; }
  // Held, or running on its disk.
  bool InFlight(JobId id) const;
  void ForEachInFlight(const std::function<void(const RecordJob&)>& fn) const;

 private:
  // ServingRules' runner: the rank's SimDisk, each job taking a drawn time.
  class DiskRunner final : public JobRunner {
   public:
    explicit DiskRunner(SimAgent& agent) : agent_(agent) {}
    Status Submit(const RecordJob& job) override;

   private:
    SimAgent& agent_;
  };

  // Reads what arrived. Errors: a frame that did not decode.
  Status Read(JobAnswers& answers);
  // The session ended with `outcome`: an error also closes the link, as
  // RankAgent sends Close and closes it.
  void Ended(const Status& outcome);
  void Send(JobAnswers& answers);

  RankId rank_;
  SimDisk& disk_;
  SimNetwork& net_;
  SimRandom& random_;
  SimAgentOptions options_;
  std::unique_ptr<ServingRules> rules_;
  DiskRunner runner_{*this};
  std::optional<JobId> last_answered_;
  SimTime stalled_until_ = 0;
  bool crashed_ = false;
};

}  // namespace strata::sim
