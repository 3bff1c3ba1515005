// Test support: runs one record job on a DiskTransport and waits (bounded)
// for its completion.
#pragma once

#include <chrono>
#include <vector>

#include "store/tier/disk_transport.h"

namespace strata::test {

// Submits `job` and returns its completion's status, or kAborted when none
// arrives within `bound`. Completions of other jobs are dropped.
inline Status RunRecordJob(DiskTransport& t, const RecordJob& job,
                           std::chrono::milliseconds bound = std::chrono::seconds(30)) {
  STRATA_RETURN_IF_ERROR(t.Submit(job));
  const auto until = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < until) {
    (void)t.WaitForCompletion(bound);
    std::vector<RecordJobDone> out;
    t.Poll(out);
    for (const RecordJobDone& d : out) {
      if (d.id == job.id) return d.status;
    }
  }
  return Status::Aborted("no completion within the bound");
}

}  // namespace strata::test
