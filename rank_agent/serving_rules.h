// ServingRules: what a peer rank's record service decides while it serves
// rank zero (RankAgent, rank_agent.h; the seeded simulation's SimAgent runs
// the same class, tests/sim/sim_agent.h). Pure: no threads, sockets, clock
// or randomness; the caller feeds it rank zero's messages, the link's end
// and its runner's completions, and sends the answers it returns.
//
// The rules:
//   - A Job is refused (kAborted) once Drain arrived. Otherwise, while no job
//     is held it goes to the runner at once: accepted, it is active until it
//     finishes; refused kBusy, it is held; any other error is its answer.
//     While jobs are held a new one joins them (first in, first out), up to
//     `held_jobs_max`; beyond, it is refused kBusy on this rank.
//   - A Job whose id is held or active is a protocol violation (its answer
//     would free what the running one still uses): it ends the session.
//   - Held jobs go to the runner, oldest first, until it says kBusy.
//   - Every job is answered exactly once: when refused, when the runner
//     fails it, or when the runner reports it finished; never before.
//   - Drain is complete (Drained is due, once) when Drain arrived and no job
//     is held or active.
//   - Close from rank zero, or the link closing, ends the session: cleanly
//     once Drained was sent, otherwise with an error. A message a peer never
//     receives while serving, or an inbox overflow, ends it with an error.
//     Heartbeats change nothing. Held jobs are dropped when the session ends
//     (they never started and nobody awaits their answer); active jobs still
//     finish, unanswered.
//
// Seam: OnJob and OnFinished are virtual so that the simulation's own test
// can plant a bug in them (tests/sim/planted_bug_rules.h) and show that the
// simulation's invariants catch it. Production code never derives from it.
//
// Thread: one caller at a time (RankAgent's thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "store/base/ids.h"
#include "store/base/record_job.h"
#include "store/base/status.h"
#include "wire/messages.h"

namespace strata {

// Where accepted jobs run: the rank's transport in RankAgent, a simulated
// disk in the simulation.
class JobRunner {
 public:
  virtual ~JobRunner() = default;
  // OK: the job runs and its completion comes back through
  // ServingRules::OnFinished. kBusy: no room now. Any other error: the job
  // failed, and nothing of it runs.
  virtual Status Submit(const RecordJob& job) = 0;
};

// What became of a Job that arrived.
enum class JobAdmission : uint8_t {
  kSubmitted,        // the runner accepted it
  kHeld,             // waiting for room in the runner
  kRefusedBusy,      // the hold is full: answered kBusy
  kRefusedDraining,  // Drain arrived before it: answered kAborted
  kFailed,           // the runner refused it with an error: answered with it
  kDuplicate,        // a job of that id is held or active: ends the session
};
std::string_view JobAdmissionName(JobAdmission admission);

// The answers a call produced, in the order they must reach rank zero.
using JobAnswers = std::vector<wire::JobDone>;

class ServingRules {
 public:
  ServingRules(RankId rank, size_t held_jobs_max) : rank_(rank), held_jobs_max_(held_jobs_max) {}
  virtual ~ServingRules() = default;
  ServingRules(const ServingRules&) = delete;
  ServingRules& operator=(const ServingRules&) = delete;

  // One message from rank zero while serving. Returns how the session ended
  // when this message ends it (OK: a clean end), nullopt while it goes on.
  // Answers for refused or failed jobs are appended to `answers`.
  std::optional<Status> OnMessage(const wire::Message& message, JobRunner& runner,
                                  JobAnswers& answers);
  // The record link closed; `why` says how (its cause and reason). Ends the
  // session: OK once Drained was sent.
  Status OnLinkClosed(std::string_view why);
  // Rank zero sent more messages than this rank queues. Ends the session.
  Status OnOverflow();

  // A Job from rank zero (OnMessage calls it; the rules above).
  virtual JobAdmission OnJob(const RecordJob& job, JobRunner& runner, JobAnswers& answers);
  // Submits held jobs, oldest first, until the runner says kBusy; a job the
  // runner fails is answered. Nothing once the session ended.
  void SubmitHeld(JobRunner& runner, JobAnswers& answers);
  // The runner finished an active job: its answer (unless the session ended).
  // A completion of a job that is not active is ignored.
  virtual void OnFinished(const RecordJobDone& done, JobAnswers& answers);

  // True once: Drain arrived, nothing is held or active, and Drained was not
  // yet sent. The caller then sends Drained and calls MarkDrained.
  bool DrainDue() const;
  void MarkDrained() { drained_ = true; }

  // The answer rank zero receives for a job's outcome on this rank.
  wire::JobDone AnswerFor(const RecordJobDone& done) const;

  RankId rank() const { return rank_; }
  bool draining() const { return draining_; }
  bool drained() const { return drained_; }
  bool ended() const { return ended_; }
  size_t active_count() const { return active_.size(); }
  // Waiting for room in the runner, oldest first.
  const std::deque<RecordJob>& held() const { return held_; }

 private:
  Status End(Status outcome);
  std::string Name() const;

  RankId rank_;
  size_t held_jobs_max_;
  std::deque<RecordJob> held_;
  std::unordered_set<JobId> active_;  // accepted by the runner, not yet finished
  bool draining_ = false;             // Drain arrived
  bool drained_ = false;              // Drained was sent
  bool ended_ = false;                // the session ended
};

}  // namespace strata
