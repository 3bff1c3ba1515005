// CudaDriver: the CUDA driver API, loaded at run time with
// dlopen("libcuda.so.1") so that a host without a driver runs everything
// else (DESIGN.md). Entry points are resolved with cuGetProcAddress_v2 at the
// ABI version this file was written against, so versioned symbols (`_v2`)
// resolve correctly; cuMemcpyBatchAsync and cuMemcpy3DBatchAsync are bound
// with their CUDA 13 signatures and only from a driver that provides them.
//
// Every method turns a driver error into a Status naming the call and the
// driver's error name ("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of
// memory)"). cuda.h stays out of this header: handles are opaque pointers.
//
// Thread: every method may be called from any thread; calls that act on "the
// current context" need one made current on the calling thread first
// (ContextGuard, or SetCurrentContext on a thread the caller owns).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "cuda/copy_plan.h"
#include "store/base/status.h"
#include "store/transfer/transfers.h"

// Opaque driver handle types (defined by cuda.h, never here).
struct CUctx_st;
struct CUstream_st;
struct CUevent_st;
struct CUmod_st;
struct CUfunc_st;

namespace strata {

inline constexpr const char* kCudaDriverLibrary = "libcuda.so.1";
// cuMemcpyBatchAsync's CUDA 13 signature needs a CUDA 13.0 driver (580+).
inline constexpr int kCudaBatchCopyDriverVersion = 13000;

using CudaContext = CUctx_st*;
using CudaStream = CUstream_st*;
using CudaEvent = CUevent_st*;
using CudaModule = CUmod_st*;
using CudaFunction = CUfunc_st*;
using CudaAllocationHandle = unsigned long long;
// A legacy CUDA IPC handle (CUipcMemHandle): opaque bytes another process
// opens to address the same device memory.
inline constexpr size_t kCudaIpcHandleBytes = 64;
using CudaIpcHandle = std::array<uint8_t, kCudaIpcHandleBytes>;

enum class StreamPriority : unsigned char { kLeast, kGreatest };

enum class CudaDeviceAttribute : unsigned char {
  kIntegrated,                      // 1 when the GPU shares memory with the host
  kHostNumaId,                      // host NUMA node nearest the device, -1 when none
  kUnifiedAddressing,               // 1 when host and device share one address space
  kHostPointerForRegisteredMemory,  // 1 when a registered host pointer is valid on the device
  kMaxPitch,                        // largest pitch of a 2-D copy, bytes
  kMultiprocessorCount,
};

// Preallocated parameter arrays for batched copies of at most `capacity` ops;
// one per transfer thread, reused for every batch.
class CudaCopyArrays {
 public:
  explicit CudaCopyArrays(size_t capacity);
  ~CudaCopyArrays();
  CudaCopyArrays(const CudaCopyArrays&) = delete;
  CudaCopyArrays& operator=(const CudaCopyArrays&) = delete;
  size_t capacity() const { return capacity_; }

 private:
  friend class CudaDriver;
  struct Impl;
  size_t capacity_;
  std::unique_ptr<Impl> impl_;
};

class CudaDriver {
 public:
  // Opens `library`, resolves the entry points and runs cuInit. Errors are
  // kUnavailable and start with "no CUDA driver: " (no library, not a driver,
  // built without CUDA headers) or "no usable CUDA device: " (cuInit failed).
  static Result<std::shared_ptr<const CudaDriver>> Load(
      const std::string& library = kCudaDriverLibrary);
  // The library stays loaded for the life of the process: libcuda must not be
  // unloaded under its own threads.
  ~CudaDriver();
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  int version() const;  // e.g. 13000 for CUDA 13.0
  const std::string& library() const { return library_; }

  Result<int> DeviceCount() const;
  Result<std::string> DeviceName(int ordinal) const;
  // The device's UUID as nvidia-smi prints it: "GPU-" and 32 hex digits in
  // groups of 8-4-4-4-12. Stable across reboots: a pool instance's identity.
  Result<std::string> DeviceUuid(int ordinal) const;
  Result<int> DeviceAttribute(int ordinal, CudaDeviceAttribute attribute) const;

  // The device's primary context (shared with an embedding runtime); every
  // retain needs one release.
  Result<CudaContext> RetainPrimaryContext(int ordinal) const;
  Status ReleasePrimaryContext(int ordinal) const;
  Status SetCurrentContext(CudaContext context) const;
  Status PushContext(CudaContext context) const;
  Status PopContext() const;

  // A non-blocking stream at the least or the greatest priority the context
  // offers (the default stream, and a runtime's streams unless it asks
  // otherwise, sit at the least).
  Result<CudaStream> CreateStream(StreamPriority priority) const;
  Result<CudaStream> CreateLowestPriorityStream() const {
    return CreateStream(StreamPriority::kLeast);
  }
  Status SynchronizeStream(CudaStream stream) const;
  Status DestroyStream(CudaStream stream) const;
  // An event whose wait sleeps instead of spinning (blocking sync, no timing).
  Result<CudaEvent> CreateBlockingEvent() const;
  Status RecordEvent(CudaEvent event, CudaStream stream) const;
  Status SynchronizeEvent(CudaEvent event) const;
  // Work queued on `stream` after this call waits for `event`'s last record.
  Status StreamWaitEvent(CudaStream stream, CudaEvent event) const;
  Status DestroyEvent(CudaEvent event) const;

  // Whether the batched copies exist (CUDA 13 driver).
  bool has_batch_copy() const;
  bool has_batch_copy_3d() const;
  // One cuMemcpyBatchAsync of 1-D `ops` (height 1) with one attribute:
  // stream-ordered source access, device and host location hints.
  Status BatchCopyAsync(TransferDirection direction, int ordinal, std::span<const CopyOp> ops,
                        CudaCopyArrays& arrays, CudaStream stream) const;
  // One cuMemcpy3DBatchAsync of 2-D `ops` (pointer operands, depth 1).
  Status BatchCopy2DAsync(TransferDirection direction, int ordinal, std::span<const CopyOp> ops,
                          CudaCopyArrays& arrays, CudaStream stream) const;
  // cuMemcpyDtoHAsync / cuMemcpyHtoDAsync of one contiguous range.
  Status CopyAsync(TransferDirection direction, uint64_t device, void* host, uint64_t bytes,
                   CudaStream stream) const;
  // Synchronous cuMemcpyDtoH / cuMemcpyHtoD (any host memory).
  Status CopySync(TransferDirection direction, uint64_t device, void* host, uint64_t bytes) const;

  Result<uint64_t> MemAlloc(uint64_t bytes) const;
  Status MemFree(uint64_t device) const;
  Status MemsetD8(uint64_t device, uint8_t value, uint64_t bytes) const;
  // Free and total device memory of the current context's device.
  Result<std::pair<uint64_t, uint64_t>> MemInfo() const;
  Result<void*> MemAllocHost(uint64_t bytes) const;
  Status MemFreeHost(void* host) const;
  // cuMemHostRegister_v2 with PORTABLE (pinned for every context) and
  // DEVICEMAP (kernels may address it); needs a current context.
  Status HostRegister(void* host, uint64_t bytes) const;
  Status HostUnregister(void* host) const;
  // cuMemHostGetDevicePointer_v2: the device address of registered `host`.
  Result<uint64_t> HostDevicePointer(void* host) const;

  // Virtual memory management, for per-rank split pools: pinned host memory
  // on one NUMA node, mapped into a reserved range, open to one device and
  // the host only.
  bool has_vmm() const;
  Result<uint64_t> HostNumaGranularity(int numa_node) const;
  Result<CudaAllocationHandle> CreateHostNumaAllocation(int numa_node, uint64_t bytes) const;
  Result<uint64_t> ReserveAddress(uint64_t bytes, uint64_t alignment) const;
  Status MapAllocation(uint64_t address, uint64_t bytes, CudaAllocationHandle handle) const;
  Status SetDeviceAndHostAccess(uint64_t address, uint64_t bytes, int ordinal, int numa_node) const;
  Status Unmap(uint64_t address, uint64_t bytes) const;
  Status ReleaseAllocation(CudaAllocationHandle handle) const;
  Status FreeAddress(uint64_t address, uint64_t bytes) const;

  // Device memory shared between processes (an attached runtime's planes,
  // docs/embedding.md): a VMM allocation on a device, exported by one process
  // as a POSIX file descriptor, imported and mapped by another
  // (cuda/driver_sharing.cc).
  bool has_shareable_handles() const;
  // The minimum granularity of such an allocation on device `ordinal`.
  Result<uint64_t> DeviceGranularity(int ordinal) const;
  // `bytes` (a multiple of DeviceGranularity) on device `ordinal`, exportable.
  Result<CudaAllocationHandle> CreateShareableDeviceAllocation(int ordinal, uint64_t bytes) const;
  // A new file descriptor for `handle`; the caller closes it.
  Result<int> ExportToFd(CudaAllocationHandle handle) const;
  // The allocation behind an exported descriptor (the fd stays the caller's);
  // release it with ReleaseAllocation once mapped (the mapping keeps it).
  Result<CudaAllocationHandle> ImportFromFd(int fd) const;
  // The device ordinal an allocation lives on; kInvalidArgument when it is
  // not device memory.
  Result<int> AllocationDevice(CudaAllocationHandle handle) const;
  // Read-write access from device `ordinal` only.
  Status SetDeviceAccess(uint64_t address, uint64_t bytes, int ordinal) const;

  // Legacy CUDA IPC, for memory from cuMemAlloc (cudaMalloc, PyTorch's
  // caching allocator): the exporting process takes a handle of an
  // allocation's base; the importer opens it (on its current context) at an
  // address the driver chooses, and closes it when done. False when the
  // driver lacks any of the three entry points.
  bool has_legacy_ipc() const;
  // cuIpcGetMemHandle of the allocation at `device` (its base address).
  Result<CudaIpcHandle> IpcHandleOf(uint64_t device) const;
  // cuIpcOpenMemHandle with lazy peer access: the address in this process.
  Result<uint64_t> IpcOpen(const CudaIpcHandle& handle) const;
  // cuIpcCloseMemHandle of an address IpcOpen returned.
  Status IpcClose(uint64_t device) const;
  // The allocation that holds `device` (a cudaMalloc'd plane's address, an
  // opened IPC block's): its base and bytes (cuMemGetAddressRange) and the
  // device whose memory it is (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL), which
  // for a block opened on another device's context is not the opener's.
  struct DeviceBlock {
    uint64_t base = 0;
    uint64_t bytes = 0;
    int ordinal = -1;
  };
  Result<DeviceBlock> BlockOf(uint64_t device) const;

  // Modules and kernel launches (the optional gather kernel).
  Result<CudaModule> LoadModule(const char* image) const;
  Status UnloadModule(CudaModule module) const;
  Result<CudaFunction> GetFunction(CudaModule module, const char* name) const;
  Status LaunchKernel(CudaFunction function, uint32_t grid_x, uint32_t block_x, void** params,
                      CudaStream stream) const;

 private:
  struct Api;  // resolved entry points (driver_table.h)
  CudaDriver();
  Status Check(int result, const char* call) const;
  Status Missing(const char* call) const;

  std::string library_;
  std::unique_ptr<Api> api_;
};

// Makes `context` current on this thread for the guard's life, then restores
// whatever was current before (push/pop), so an embedding runtime's own
// current context survives.
class ContextGuard {
 public:
  ContextGuard(const CudaDriver& driver, CudaContext context);
  ~ContextGuard();
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;
  const Status& status() const { return status_; }

 private:
  const CudaDriver& driver_;
  Status status_;
};

// A device's primary context, retained for this object's life.
class PrimaryContext {
 public:
  static Result<std::unique_ptr<PrimaryContext>> Retain(std::shared_ptr<const CudaDriver> driver,
                                                        int ordinal);
  ~PrimaryContext();
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  CudaContext get() const { return context_; }
  int ordinal() const { return ordinal_; }
  const CudaDriver& driver() const { return *driver_; }

 private:
  PrimaryContext(std::shared_ptr<const CudaDriver> driver, int ordinal, CudaContext context)
      : driver_(std::move(driver)), ordinal_(ordinal), context_(context) {}
  std::shared_ptr<const CudaDriver> driver_;
  int ordinal_;
  CudaContext context_;
};

}  // namespace strata
