// Internal to cuda/: the driver entry points CudaDriver resolves, and the
// parameter arrays of batched copies. Only cuda/*.cc include this file, and
// only when the CUDA headers were found at build time.
#pragma once

#include "cuda/driver_api.h"

#if STRATA_HAVE_CUDA_HEADERS
#include <cuda.h>
#include <cudaTypedefs.h>

#include <vector>

// X(name, version): resolved with cuGetProcAddress_v2(#name, version) into a
// PFN_<name>_v<version> pointer (cudaTypedefs.h), so the pointer's type is the
// ABI the driver hands out for that version.
#define STRATA_CUDA_REQUIRED_ENTRY_POINTS(X) \
  X(cuInit, 2000)                            \
  X(cuDriverGetVersion, 2020)                \
  X(cuGetErrorName, 6000)                    \
  X(cuGetErrorString, 6000)                  \
  X(cuDeviceGet, 2000)                       \
  X(cuDeviceGetCount, 2000)                  \
  X(cuDeviceGetName, 2000)                   \
  X(cuDeviceGetUuid, 11040)                  \
  X(cuDeviceGetAttribute, 2000)              \
  X(cuDevicePrimaryCtxRetain, 7000)          \
  X(cuDevicePrimaryCtxRelease, 11000)        \
  X(cuCtxSetCurrent, 4000)                   \
  X(cuCtxPushCurrent, 4000)                  \
  X(cuCtxPopCurrent, 4000)                   \
  X(cuCtxGetStreamPriorityRange, 5050)       \
  X(cuStreamCreateWithPriority, 5050)        \
  X(cuStreamSynchronize, 2000)               \
  X(cuStreamWaitEvent, 3020)                 \
  X(cuStreamDestroy, 4000)                   \
  X(cuEventCreate, 2000)                     \
  X(cuEventRecord, 2000)                     \
  X(cuEventSynchronize, 2000)                \
  X(cuEventDestroy, 4000)                    \
  X(cuMemcpyDtoHAsync, 3020)                 \
  X(cuMemcpyHtoDAsync, 3020)                 \
  X(cuMemcpyDtoH, 3020)                      \
  X(cuMemcpyHtoD, 3020)                      \
  X(cuMemAlloc, 3020)                        \
  X(cuMemFree, 3020)                         \
  X(cuMemsetD8, 3020)                        \
  X(cuMemGetInfo, 3020)                      \
  X(cuMemAllocHost, 3020)                    \
  X(cuMemFreeHost, 2000)                     \
  X(cuMemHostRegister, 6050)                 \
  X(cuMemHostUnregister, 4000)               \
  X(cuMemHostGetDevicePointer, 3020)         \
  X(cuModuleLoadData, 2000)                  \
  X(cuModuleUnload, 2000)                    \
  X(cuModuleGetFunction, 2000)               \
  X(cuLaunchKernel, 4000)

// Missing from some drivers: each method that needs one says so.
#define STRATA_CUDA_VMM_ENTRY_POINTS(X)   \
  X(cuMemGetAllocationGranularity, 10020) \
  X(cuMemCreate, 10020)                   \
  X(cuMemAddressReserve, 10020)           \
  X(cuMemMap, 10020)                      \
  X(cuMemSetAccess, 10020)                \
  X(cuMemUnmap, 10020)                    \
  X(cuMemRelease, 10020)                  \
  X(cuMemAddressFree, 10020)

// Device memory shared between processes (cuda/driver_sharing.cc).
#define STRATA_CUDA_SHARING_ENTRY_POINTS(X) \
  X(cuMemExportToShareableHandle, 10020)    \
  X(cuMemImportFromShareableHandle, 10020)  \
  X(cuMemGetAllocationPropertiesFromHandle, 10020)

// Legacy IPC: cuMemAlloc'd (cudaMalloc'd) device memory shared between
// processes as a 64-byte handle (cuda/driver_sharing.cc).
#define STRATA_CUDA_IPC_ENTRY_POINTS(X) \
  X(cuIpcGetMemHandle, 4010)            \
  X(cuIpcOpenMemHandle, 11000)          \
  X(cuIpcCloseMemHandle, 4010)          \
  X(cuMemGetAddressRange, 3020)         \
  X(cuPointerGetAttribute, 4000)

// Resolved only from a driver of at least kCudaBatchCopyDriverVersion: an
// older driver would hand out its 12.8 variant, whose signature differs.
#define STRATA_CUDA_BATCH_ENTRY_POINTS(X) \
  X(cuMemcpyBatchAsync, 13000)            \
  X(cuMemcpy3DBatchAsync, 13000)

namespace strata {

#define STRATA_CUDA_FIELD(name, version) PFN_##name##_v##version name##_ = nullptr;
struct CudaDriver::Api {
  void* library = nullptr;
  int version = 0;
  STRATA_CUDA_REQUIRED_ENTRY_POINTS(STRATA_CUDA_FIELD)
  STRATA_CUDA_VMM_ENTRY_POINTS(STRATA_CUDA_FIELD)
  STRATA_CUDA_SHARING_ENTRY_POINTS(STRATA_CUDA_FIELD)
  STRATA_CUDA_IPC_ENTRY_POINTS(STRATA_CUDA_FIELD)
  STRATA_CUDA_BATCH_ENTRY_POINTS(STRATA_CUDA_FIELD)
};
#undef STRATA_CUDA_FIELD

struct CudaCopyArrays::Impl {
  std::vector<CUdeviceptr> dst;
  std::vector<CUdeviceptr> src;
  std::vector<size_t> sizes;
  std::vector<CUDA_MEMCPY3D_BATCH_OP> ops;
};

}  // namespace strata

#else  // without the headers nothing resolves: CudaDriver::Load always fails

namespace strata {
struct CudaDriver::Api {};
}  // namespace strata

#endif  // STRATA_HAVE_CUDA_HEADERS
