// SimDisk: one rank's record directory and disk in the seeded simulation
// (tests/sim/simulation.h). It holds the rank's record files by key, each
// with the header digest every rank derives from the same job (as
// HeaderAgreementDigest does from the same header), and runs record jobs
// that finish at a simulated time. Faults are set by the simulation: a full
// disk until some time, and the next N jobs failing with EIO. A failed job
// changes no file, as a real store's temporary file never becomes the
// record. No clock, thread or randomness of its own: a crash draws from the
// simulation's random stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "store/base/digest.h"
#include "store/base/ids.h"
#include "store/base/prefix_key.h"
#include "store/base/status.h"
#include "store/tier/disk_transport.h"
#include "tests/sim/sim_random.h"

namespace strata::sim {

// Simulated time in microseconds since the simulation began.
using SimTime = uint64_t;

struct SimRecord {
  std::optional<PrefixKey> parent;
  Digest128 digest{};
  bool row = false;
  uint32_t tail_pages = 0;
  friend bool operator==(const SimRecord&, const SimRecord&) = default;
};
using SimFiles = std::map<PrefixKey, SimRecord>;

struct SimDiskFaults {
  SimTime full_until = 0;  // stores finishing before this fail with kFsFull
  uint32_t io_errors = 0;  // the next this many jobs to finish fail with kIoError
};

struct SimDiskJob {
  RecordJob job;
  SimTime done_at = 0;
};

class SimDisk {
 public:
  // At most `jobs_max` jobs run at once; Submit says kBusy beyond.
  SimDisk(RankId rank, size_t jobs_max) : rank_(rank), jobs_max_(jobs_max) {}

  // The header digest of the file a store job writes (the same on every rank).
  static Digest128 DigestOf(const RecordJob& job);

  // kBusy when `jobs_max` jobs run.
  Status Submit(const RecordJob& job, SimTime done_at);
  // Finishes, in submission order, the jobs due at `now` (every job when
  // `all`), applying their effects; appends their outcomes.
  void Finish(SimTime now, bool all, std::vector<RecordJobDone>& out);
  // The process died: each running job took effect whole or not at all (a
  // torn file never survives the restart scan).
  void Crash(SimRandom& random);
  // Forgets the job outcomes of the session that ended.
  void NewSession();

  bool Running(JobId id) const;
  bool FinishedOk(JobId id) const { return finished_ok_.count(id) != 0; }
  bool FailedFull(JobId id) const { return failed_full_.count(id) != 0; }
  const std::vector<SimDiskJob>& running() const { return running_; }
  const SimFiles& files() const { return files_; }
  // For the restart scan's injected damage and the agreement's changes.
  SimFiles& mutable_files() { return files_; }
  RankId rank() const { return rank_; }

  SimDiskFaults faults;
  uint64_t injected_io_errors = 0;  // jobs failed by faults.io_errors
  uint64_t injected_full = 0;       // stores failed by faults.full_until

 private:
  RecordJobDone Apply(const RecordJob& job, SimTime now);

  RankId rank_;
  size_t jobs_max_;
  SimFiles files_;
  std::vector<SimDiskJob> running_;  // submission order
  std::set<JobId> finished_ok_;
  std::set<JobId> failed_full_;
};

}  // namespace strata::sim
