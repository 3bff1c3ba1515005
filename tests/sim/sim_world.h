// SimWorld: one seed's run of the simulation (simulation.h says what it
// checks). Internal to tests/sim: sim_world.cc runs sessions, steps, faults
// and the store model; sim_invariants.cc holds the checks and the restart
// agreement.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/sharded_transport.h"
#include "tests/sim/sim_agent.h"
#include "tests/sim/sim_disk.h"
#include "tests/sim/sim_id_pool.h"
#include "tests/sim/sim_local_transport.h"
#include "tests/sim/sim_network.h"
#include "tests/sim/sim_random.h"
#include "tests/sim/simulation.h"
#include "wire/link/link_inbox.h"

namespace strata::sim {

// Per-step chances of each fault, drawn once per seed (some seeds are calm,
// some stormy).
struct FaultRates {
  double reset = 0;
  double kill_peer = 0;
  double kill_zero = 0;
  double half_open = 0;
  double stall = 0;
  double spike = 0;
  double full = 0;
  double eio = 0;
  double hostile = 0;
  double damage = 0;  // per restart (after the per-step rates)
};

class SimWorld {
 public:
  explicit SimWorld(const SimOptions& options);
  // A run that ended on a violation leaves a session open: its links are
  // reset so that rank zero's Close does not wait for drains.
  ~SimWorld();
  SimWorld(const SimWorld&) = delete;
  SimWorld& operator=(const SimWorld&) = delete;
  SimReport Run();

 private:
  // What the store model knows of a record every rank holds.
  struct Known {
    std::optional<PrefixKey> parent;
    Digest128 digest{};
    uint32_t tail_pages = 0;
    bool row = false;
    bool row_uncertain = false;  // a truncate whose outcome is unknown
  };

  // sim_world.cc
  void RunSession(uint32_t session);
  void StartSession();
  void EndSession();
  void KillZero();
  void Step(bool submit);
  void Faults();
  void SubmitSome();
  std::optional<RecordJob> NextJob();
  void Submit(RecordJob job);
  void PollTransport();
  void OnDone(const RecordJobDone& done);
  void Forget(const RecordJob& job);  // outcome unknown: the session ended first
  void Flush();
  bool KeyBusy(const PrefixKey& key) const { return busy_keys_.count(key) != 0; }
  bool HasChildren(const PrefixKey& key) const;

  // sim_invariants.cc
  void CheckCompletion(const RecordJob& job, const RecordJobDone& done, bool cleanup_failed);
  void CheckEveryStep();
  void CheckIdsHeld(uint32_t rank, const RecordJob& job, const char* where);
  bool InFlightAt(uint32_t rank, JobId id, std::string& where) const;
  bool HeldAnywhere(const PrefixKey& key, uint32_t& rank) const;
  void Restart();
  void Damage();
  void CheckDurability(const std::set<PrefixKey>& kept);

  void Violation(const std::string& what);
  void Trace(const std::string& event);
  bool failed() const { return !report_.violation.ok(); }
  uint32_t world() const { return static_cast<uint32_t>(disks_.size()); }

  SimOptions options_;
  SimRandom random_;
  FaultRates rates_;
  ShardedOptions sharded_;
  SimAgentOptions agent_;
  SimNetworkOptions net_options_;
  size_t disk_jobs_max_ = 8;
  SimReport report_;
  std::deque<std::string> trace_;
  SimTime now_ = 0;
  uint32_t session_ = 0;

  // The world: disks survive restarts; the rest is one session's.
  std::vector<std::unique_ptr<SimDisk>> disks_;  // index = rank
  std::unique_ptr<SimNetwork> network_;
  std::vector<std::unique_ptr<SimAgent>> agents_;  // index = rank - 1
  std::shared_ptr<wire::LinkInbox> inbox_;
  SimLocalTransport* local_ = nullptr;  // owned by transport_
  std::unique_ptr<ShardedTransport> transport_;
  bool stop_seen_ = false;     // the transport reported it stopped
  bool session_clean_ = true;  // no link or rank fault this session
  bool kill_zero_ = false;     // rank zero is killed at the end of this step
  bool flushing_ = false;
  uint64_t hostile_seen_ = 0;  // hostile frames rank zero received so far

  // The store model.
  SimIdPool pages_{48};
  SimIdPool slots_{8};
  uint64_t next_job_ = 1;
  std::map<JobId, RecordJob> outstanding_;
  std::set<PrefixKey> busy_keys_;         // a job of this key is outstanding
  std::map<PrefixKey, Known> committed_;  // on every rank, certainly
  std::set<PrefixKey> uncertain_;         // maybe on some ranks
  std::set<PrefixKey> damaged_;           // damaged on purpose before this restart
};

}  // namespace strata::sim
