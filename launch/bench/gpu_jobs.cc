#include "launch/bench/gpu_jobs.h"

#include <algorithm>
#include <chrono>

namespace strata {

namespace {
using Clock = std::chrono::steady_clock;
constexpr auto kCompletionWait = std::chrono::seconds(60);  // one job never takes longer
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
}  // namespace

Result<double> RunJobs(Transfers& t, std::vector<TransferJob>& jobs, uint64_t& next_id) {
  for (TransferJob& j : jobs) j.id = JobId(next_id++);
  const auto start = Clock::now();
  size_t submitted = 0;
  size_t finished = 0;
  std::vector<TransferCompletion> done;
  while (finished < jobs.size()) {
    while (submitted < jobs.size()) {
      Status s = t.Submit(jobs[submitted]);
      if (s.code() == StatusCode::kBusy) break;
      STRATA_RETURN_IF_ERROR(s);
      ++submitted;
    }
    if (!t.WaitForCompletion(kCompletionWait)) {
      return Status::Aborted("no transfer completed within 60 s");
    }
    done.clear();
    t.Poll(done);
    for (const TransferCompletion& c : done) STRATA_RETURN_IF_ERROR(c.status);
    finished += done.size();
  }
  return Seconds(start, Clock::now());
}

std::vector<TransferJob> Windows(TransferDirection dir, const std::vector<PageId>& ids,
                                 const std::vector<uint8_t*>& records) {
  std::vector<TransferJob> jobs;
  for (size_t begin = 0; begin < ids.size(); begin += kMaxWindowPages) {
    const size_t end = std::min<size_t>(ids.size(), begin + kMaxWindowPages);
    TransferJob j;
    j.direction = dir;
    j.page_ids.assign(ids.begin() + static_cast<long>(begin), ids.begin() + static_cast<long>(end));
    j.page_records.assign(records.begin() + static_cast<long>(begin),
                          records.begin() + static_cast<long>(end));
    jobs.push_back(std::move(j));
  }
  return jobs;
}

}  // namespace strata
