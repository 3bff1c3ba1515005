// Shared by the GPU benchmarks (bench_gpu.cc, bench_prefill.cc): page windows
// as transfer jobs, and running a set of them with the queue kept full.
#pragma once

#include <cstdint>
#include <vector>

#include "store/transfer/transfers.h"

namespace strata {

// Jobs of at most kMaxWindowPages moving device `ids[i]` <-> host `records[i]`.
std::vector<TransferJob> Windows(TransferDirection dir, const std::vector<PageId>& ids,
                                 const std::vector<uint8_t*>& records);

// Runs `jobs` through `t` keeping its queue full (ids from `next_id`);
// returns the wall seconds from the first submit to the last completion.
Result<double> RunJobs(Transfers& t, std::vector<TransferJob>& jobs, uint64_t& next_id);

}  // namespace strata
