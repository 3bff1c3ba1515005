// DirectFileIo: the seam through which the direct transport (seed 2.6) moves
// record bytes between device memory and an open record file without a host
// copy. The real implementation is cuFile batch I/O (cuda/cufile_io.h); the
// CPU test double (store/tier/direct_transport_host_doubles.h) uses pread and
// pwrite over host memory standing in for device memory.
//
// Thread: the direct transport's worker thread only. Run blocks until every
// entry finished or failed.
#pragma once

#include <span>
#include <vector>

#include "store/base/status.h"
#include "store/tier/direct_transport_plan.h"

namespace strata {

class DirectFileIo {
 public:
  virtual ~DirectFileIo() = default;
  // Runs `batches` (SplitDirectBatches of one job's windows, in order)
  // against the record file open at `fd` (O_DIRECT; the caller closes it).
  // kDeviceToHost writes the device bytes to the file, kHostToDevice reads
  // the file into device memory. Returns one Status per entry, batches
  // flattened in order; an entry that failed leaves the others unaffected.
  virtual std::vector<Status> Run(int fd, TransferDirection direction,
                                  std::span<const std::vector<DirectIoEntry>> batches) = 0;
};

}  // namespace strata
