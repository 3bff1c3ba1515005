// CuFileDirectIo (not cufile_api.h's CuFileIo, one batch entry): the DirectFileIo of one process's
// GPU ranks (seed 2.6) over cuFile batch I/O (cuda/cufile_api.h). Registers the plane and row
// buffers once (cuFileBufRegister) and deregisters them when destroyed; each Run registers the
// file's handle (cuFileHandleRegister; the transport opened it O_DIRECT), submits one cuFile batch
// per planned batch (a window's entries, cut by SplitDirectBatches), each cut again to the
// driver's own properties.max_batch_io_size as read at Create (cuFile 1.x on CUDA 13 allows
// 128 whatever cufile.json asks, and refuses a larger batch with error 5022), waits for its
// entries within a bound, destroys it, and deregisters the handle.
//
// An entry outside every registered buffer still runs (cuFile bounces it
// through its own buffers, slower). A batch that cannot be set up or
// submitted fails all its entries; a batch whose entries do not finish
// within `batch_timeout_ms` fails those entries with kAborted.
//
// Thread: the direct transport's worker; each call makes `context` current
// for its duration (ContextGuard).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "cuda/cufile_api.h"
#include "cuda/cufile_policy.h"
#include "cuda/driver_api.h"
#include "store/tier/direct_file_io.h"

namespace strata {

// One device range to register: a page plane or the row plane of a rank.
struct CuFileBuffer {
  uint64_t device = 0;
  uint64_t bytes = 0;
};

struct CuFileDirectIoOptions {
  uint32_t batch_timeout_ms = 30'000;  // per batch, across its status waits
};

class CuFileDirectIo final : public DirectFileIo {
 public:
  // `library`'s driver is open; `context` holds the buffers. Registers every
  // buffer, or none: a failed registration deregisters those before it (the
  // error names the buffer). The object keeps `library` and `context` alive,
  // so whoever holds it last (the direct transport's worker) can always
  // deregister.
  static Result<std::unique_ptr<CuFileDirectIo>> Create(
      std::shared_ptr<CuFileLibrary> library, std::shared_ptr<const PrimaryContext> context,
      const std::vector<CuFileBuffer>& buffers, CuFileDirectIoOptions options = {});
  // Deregisters every buffer Create registered (cuFile refuses a second
  // registration of a registered pointer, error 5023, until then).
  ~CuFileDirectIo() override;
  CuFileDirectIo(const CuFileDirectIo&) = delete;
  CuFileDirectIo& operator=(const CuFileDirectIo&) = delete;

  std::vector<Status> Run(int fd, TransferDirection direction,
                          std::span<const std::vector<DirectIoEntry>> batches) override;

 private:
  CuFileDirectIo(std::shared_ptr<CuFileLibrary> library,
                 std::shared_ptr<const PrimaryContext> context, CuFileDirectIoOptions options)
      : library_(std::move(library)), context_(std::move(context)), options_(options) {}
  // The registered buffer holding [device, + bytes), or none.
  const CuFileBuffer* BufferOf(uint64_t device, uint64_t bytes) const;
  void RunBatch(CuFileHandle file, CuFileOp op, std::span<const DirectIoEntry> batch,
                std::vector<Status>& out) const;

  std::shared_ptr<CuFileLibrary> library_;
  std::shared_ptr<const PrimaryContext> context_;
  CuFileDirectIoOptions options_;
  uint32_t max_batch_entries_ = kCuFileMaxBatchEntries;  // the driver's, from its properties
  std::vector<CuFileBuffer> registered_;
};

}  // namespace strata
