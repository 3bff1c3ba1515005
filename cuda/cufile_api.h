// CuFileLibrary: NVIDIA cuFile (GPUDirect Storage, seed 2.6) loaded at run
// time with dlopen("libcufile.so.0"), the way CudaDriver loads libcuda, so a
// host without it runs everything else. Binds driver open and close,
// properties, buffer and handle registration, the batch API, and the
// synchronous cuFileRead / cuFileWrite. cufile.h
// stays out: the ABI is declared in cuda/cufile_table.h.
//
// Every error is a Status naming the call and cuFile's error number
// ("cuFileBufRegister: cuFile error 5011 (CUresult 0)").
//
// Thread: every method may be called from any thread once the driver is
// open; buffer registration needs the buffer's CUDA context current.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "store/base/status.h"

namespace strata {

inline constexpr const char* kCuFileLibrary = "libcufile.so.0";
// The CUFILE_ENV_PATH_JSON variable cuFile reads its configuration from.
inline constexpr const char* kCuFileConfigEnv = "CUFILE_ENV_PATH_JSON";

// CUfileDrvProps_t as the probe reads it.
struct CuFileProperties {
  uint32_t nvfs_major = 0;  // nvidia-fs version; 0 when the module is absent
  uint32_t nvfs_minor = 0;
  uint64_t max_direct_io_kib = 0;
  uint32_t status_flags = 0;   // CUfileDriverStatusFlags bits (filesystems)
  uint32_t control_flags = 0;  // CUfileDriverControlFlags bits
  uint32_t feature_flags = 0;  // CUfileFeatureFlags bits
  uint32_t max_batch_io_entries = 0;
  bool compat_mode_allowed() const;
  bool batch_io_supported() const;
  bool nvme_supported() const;  // NVMe, NVMe-oF or NVMe P2P
};

enum class CuFileOp : unsigned char { kRead, kWrite };
using CuFileHandle = void*;
using CuFileBatch = void*;

// One entry (of a batch, or one synchronous call): `bytes` between device
// memory at `device_base + device_offset` and `file_offset` of `file`.
// `device_base` is the registered buffer's base when the memory lies in one
// (cuFile requires it), and the entry's own address otherwise.
struct CuFileIo {
  CuFileOp op = CuFileOp::kRead;
  CuFileHandle file = nullptr;
  uint64_t device_base = 0;
  uint64_t device_offset = 0;
  uint64_t file_offset = 0;
  uint64_t bytes = 0;
  uint64_t cookie = 0;  // returned in its event: the entry's index (batch only)
};
enum class CuFileIoState : unsigned char { kPending, kComplete, kFailed };
struct CuFileIoEvent {
  uint64_t cookie = 0;
  CuFileIoState state = CuFileIoState::kPending;
  int64_t result = 0;  // bytes moved (kComplete) or a negative error
};

// The Status of a cuFileRead / cuFileWrite of `bytes` that returned
// `returned`, `errno_value` being errno right after the call (pure). OK only
// when all `bytes` moved; otherwise kIoError naming the call and either the
// errno (-1, or -n below cuFile's error base) or cuFile's error number, or
// "moved N of M bytes" for a short count.
Status CuFileSyncIoStatus(CuFileOp op, int64_t returned, int errno_value, uint64_t bytes);

class CuFileLibrary {
 public:
  // Opens `library` and resolves every entry point. kUnavailable reading
  // "libcufile.so.0 not found" (dlopen's message follows) when absent, or
  // naming the missing symbol.
  static Result<std::shared_ptr<CuFileLibrary>> Load(const std::string& library = kCuFileLibrary);
  ~CuFileLibrary();  // closes the driver if open; the library stays loaded
  CuFileLibrary(const CuFileLibrary&) = delete;
  CuFileLibrary& operator=(const CuFileLibrary&) = delete;

  // cuFileDriverOpen. The caller installs the policy first
  // (InstallCuFilePolicy, cuda/cufile_policy.h): cuFile reads its JSON here.
  Status DriverOpen();
  Status DriverClose();
  Result<CuFileProperties> Properties() const;

  Status BufRegister(uint64_t device, uint64_t bytes) const;
  Status BufDeregister(uint64_t device) const;
  // `fd` is open with O_DIRECT; deregister before closing it.
  Result<CuFileHandle> HandleRegister(int fd) const;
  void HandleDeregister(CuFileHandle handle) const;

  Result<CuFileBatch> BatchSetUp(uint32_t max_entries) const;
  Status BatchSubmit(CuFileBatch batch, std::span<const CuFileIo> ios) const;
  // Waits (up to `timeout_ms`) for at least `min_events` entries, then
  // returns those that finished since the last call (at most out.size()).
  Result<size_t> BatchGetStatus(CuFileBatch batch, uint32_t min_events,
                                std::span<CuFileIoEvent> out, uint32_t timeout_ms) const;
  void BatchDestroy(CuFileBatch batch) const;
  // Asks cuFile to cancel a submitted batch's entries; they still report a
  // terminal state through BatchGetStatus (canceled ones as kFailed).
  // kUnavailable when the library lacks cuFileBatchIOCancel.
  Status BatchCancel(CuFileBatch batch) const;

  // cuFileRead (kRead) or cuFileWrite (kWrite) of `io` on the calling thread
  // (the buffer's CUDA context current); blocks until it returns.
  // CuFileSyncIoStatus of the result; `io.cookie` is unused.
  Status SyncIo(const CuFileIo& io) const;

  const std::string& library() const { return library_; }

 private:
  struct Api;
  CuFileLibrary();
  std::string library_;
  std::unique_ptr<Api> api_;
  bool open_ = false;
};

}  // namespace strata
