// CuFileDirectIo (not cufile_api.h's CuFileIo, one entry): the DirectFileIo of one process's GPU
// ranks (seed 2.6) over cuFile (cuda/cufile_api.h). Registers the plane and row buffers once
// (cuFileBufRegister; an attached runtime's planes on each attachment, Register / DeregisterAll)
// and deregisters them when destroyed; each Run registers the file's handle
// (cuFileHandleRegister; the transport opened it O_DIRECT), moves the entries in the mode its
// options name, and deregisters the handle. Either way an entry inside a registered buffer is
// given as that buffer's base and the offset within it (cuFile requires the registered base), and
// an entry outside every registered buffer still runs (cuFile bounces it through its own
// buffers, slower).
//
// kBatch (the direct path, with nvidia-fs): one cuFile batch per planned batch (a window's
// entries, cut by SplitDirectBatches), each cut again to the driver's own
// properties.max_batch_io_size as read at Create (cuFile 1.x on CUDA 13 allows 128 whatever
// cufile.json asks, and refuses a larger batch with error 5022); waits for its entries, then
// destroys it. A batch that cannot be set up or submitted fails all its entries. A batch whose
// entries do not finish within `batch_timeout_ms` is canceled (cuFileBatchIOCancel, where the
// library has it), and Run still waits, without bound, until every entry has ended: an entry that
// ended failed or canceled then fails with kAborted. Run never returns while an entry may still
// move bytes (a late DMA into pages the runtime reused, or planes a detach unmapped, would be
// silent corruption; a stalled job is not). Only cuFile failing to report status at all ends the
// wait early, failing the entries left.
//
// kSynchronous (compatibility mode, under the test-only switch): one cuFileRead / cuFileWrite per
// entry, the Run's entries split among at most `sync_workers` threads (SplitAmongWorkers; the
// calling thread runs the first share), each with the context current. cuFile's compatibility
// batch path costs about 5.4 ms per entry whatever its batch settings (it polls; measured on the
// H200, docs/operations.md "GPUDirect Storage"). Each call blocks until cuFile returns: there is
// no timeout. A failed or short call fails its entry only.
//
// Thread: the direct transport's worker; each call makes `context` current
// for its duration (ContextGuard), as does each synchronous worker thread.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "cuda/cufile_api.h"
#include "cuda/cufile_policy.h"
#include "cuda/driver_api.h"
#include "store/base/mutex.h"
#include "store/tier/direct_file_io.h"

namespace strata {

// One device range to register: a page plane or the row plane of a rank.
struct CuFileBuffer {
  uint64_t device = 0;
  uint64_t bytes = 0;
};

enum class CuFileIoMode : unsigned char {
  kBatch,        // cuFile batch I/O (default; the direct path with nvidia-fs)
  kSynchronous,  // one cuFileRead / cuFileWrite per entry (compatibility mode)
};

// Threads a synchronous Run uses at most (the caller's included).
inline constexpr uint32_t kCuFileSyncWorkers = 8;

struct CuFileDirectIoOptions {
  CuFileIoMode mode = CuFileIoMode::kBatch;
  uint32_t batch_timeout_ms = 30'000;          // kBatch: per batch, across its status waits
  uint32_t sync_workers = kCuFileSyncWorkers;  // kSynchronous: threads per Run (0 counts as 1)
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

  // For planes that come and go with an attached runtime: registers
  // `buffers` beside those already registered, or none (a failure
  // deregisters the ones this call registered; the error names the buffer).
  // Contract: no Run addresses these buffers until it returns (the attach
  // gate opens after the planes are mapped and registered).
  Status Register(const std::vector<CuFileBuffer>& buffers);
  // Deregisters every registered buffer. Contract: no Run addresses them
  // (the attach gate drained before the planes are unmapped).
  void DeregisterAll();
  size_t registered() const;

 private:
  CuFileDirectIo(std::shared_ptr<CuFileLibrary> library,
                 std::shared_ptr<const PrimaryContext> context, CuFileDirectIoOptions options)
      : library_(std::move(library)), context_(std::move(context)), options_(options) {}
  using Buffers = std::vector<CuFileBuffer>;
  // The registered buffers now (a Run keeps the snapshot it started with).
  std::shared_ptr<const Buffers> Registered() const;
  // `e` as one cuFile entry: the registered buffer's base and the offset in it
  // when one of `registered` holds it, its own address otherwise. Both modes.
  CuFileIo IoOf(const Buffers& registered, CuFileHandle file, CuFileOp op,
                const DirectIoEntry& e) const;
  void RunBatch(const Buffers& registered, CuFileHandle file, CuFileOp op,
                std::span<const DirectIoEntry> batch, std::vector<Status>& out) const;
  // Every entry of `batches` (flattened, in order) as one synchronous call each.
  std::vector<Status> RunSynchronous(const Buffers& registered, CuFileHandle file, CuFileOp op,
                                     std::span<const std::vector<DirectIoEntry>> batches) const;

  std::shared_ptr<CuFileLibrary> library_;
  std::shared_ptr<const PrimaryContext> context_;
  CuFileDirectIoOptions options_;
  uint32_t max_batch_entries_ = kCuFileMaxBatchEntries;  // the driver's, from its properties
  mutable Mutex mu_;  // guards the snapshot's replacement, not the driver calls
  std::shared_ptr<const Buffers> registered_ GUARDED_BY(mu_) = std::make_shared<const Buffers>();
};

}  // namespace strata
