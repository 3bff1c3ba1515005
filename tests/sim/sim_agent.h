// SimAgent: a peer rank in the seeded simulation, modelled on RankAgent's
// serving loop (rank_agent/rank_agent.h): each Job from rank zero runs on
// the rank's own SimDisk and is answered with JobDone; a Job that finds the
// disk queue full waits in a bounded hold, beyond which it fails with kBusy
// on this rank; Drain finishes the accepted jobs and answers Drained; a lost
// link ends the session once the accepted jobs finished (their writes still
// land). A crash (SIGKILL) resets the link and leaves each running job whole
// or absent.
//
// `ack_early` plants a bug for the simulation's own tests: the agent answers
// a Job before its disk finished it, which the invariants must catch.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "tests/sim/sim_disk.h"
#include "tests/sim/sim_network.h"
#include "tests/sim/sim_random.h"

namespace strata::sim {

struct SimAgentOptions {
  size_t held_max = 8;
  SimTime disk_min = 100;  // a job's disk time, microseconds
  SimTime disk_max = 3000;
  bool ack_early = false;
};

class SimAgent {
 public:
  SimAgent(RankId rank, SimDisk& disk, SimNetwork& net, SimRandom& random, SimAgentOptions options)
      : rank_(rank), disk_(disk), net_(net), random_(random), options_(options) {}

  // One turn at the network's current time: reads what arrived (unless it
  // stopped reading), runs held jobs, answers finished ones. `all` finishes
  // every accepted job now (a drain that must end within this turn).
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
  void Accept(const RecordJob& job);
  void Reply(const RecordJobDone& done);
  void SubmitHeld();

  RankId rank_;
  SimDisk& disk_;
  SimNetwork& net_;
  SimRandom& random_;
  SimAgentOptions options_;
  std::deque<RecordJob> held_;
  std::set<JobId> acked_;  // ack_early: answered before the disk finished
  std::optional<JobId> last_answered_;
  SimTime stalled_until_ = 0;
  bool draining_ = false;
  bool drained_ = false;
  bool crashed_ = false;
};

}  // namespace strata::sim
