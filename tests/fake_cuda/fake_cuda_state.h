// Internal to the fake CUDA driver (fake_cuda.cc, fake_cuda_memory.cc): its
// process-wide state, the checks every entry point shares, and the memory and
// copy entry points the symbol table points at.
#pragma once

#include <cuda.h>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace fake_cuda {

struct Region {
  uint64_t bytes;
};

struct State {
  std::mutex mu;
  std::map<uint64_t, Region> device;  // base -> size
  std::map<uint64_t, Region> pinned;  // registered or cuMemAllocHost memory
  std::map<std::string, uint64_t> calls;
  std::map<std::string, CUresult> inject;  // next call of a function fails
  std::map<std::string, long long> values;
  int device_count = 1;
  CUresult init_result = CUDA_SUCCESS;
};

// The one driver state of the process (a driver is process-global).
State& S();

// The calling thread's context stack (cuCtxPush/Pop, cuCtxSetCurrent).
// Initial-exec: it lives in the static TLS block, so no access goes through
// __tls_get_addr. GCC 12's LeakSanitizer takes a dynamic TLS block that
// starts 16 bytes into a page for a glibc <= 2.18 one, reads the allocator's
// chunk header before it as the block's bounds, and its tracer crashes at exit
// (docs/reliability.md, Sanitizers). This library is dlopen'ed, so without the
// model every thread's stack would be such a block.
extern thread_local std::vector<CUcontext> context_stack __attribute__((tls_model("initial-exec")));

inline char context_token[8];
inline char stream_token[8];
inline char event_token[8];
inline char module_token[8];
inline char function_token[8];
inline char param_function_token[8];

inline CUcontext FakeContext() { return reinterpret_cast<CUcontext>(context_token); }

// Counts the call; returns an injected error, or CUDA_SUCCESS.
inline CUresult Enter(const char* name) {
  std::lock_guard lock(S().mu);
  S().calls[name]++;
  auto it = S().inject.find(name);
  if (it == S().inject.end()) return CUDA_SUCCESS;
  CUresult r = it->second;
  S().inject.erase(it);
  return r;
}

// Host bytes behind a device allocation of `bytes` (whole pages).
inline size_t MappedBytes(uint64_t bytes) { return (bytes + 4095) / 4096 * 4096; }

inline bool HasContext() { return !context_stack.empty() && context_stack.back() != nullptr; }

inline bool Within(const std::map<uint64_t, Region>& regions, uint64_t address, uint64_t bytes) {
  auto it = regions.upper_bound(address);
  if (it == regions.begin()) return false;
  --it;
  return address >= it->first && address + bytes <= it->first + it->second.bytes;
}

inline bool IsDevice(uint64_t address, uint64_t bytes) {
  std::lock_guard lock(S().mu);
  return Within(S().device, address, bytes);
}

inline bool IsPinned(uint64_t address, uint64_t bytes) {
  std::lock_guard lock(S().mu);
  return Within(S().pinned, address, bytes);
}

// One copy between device memory and pinned host memory, in either direction.
inline bool CheckedCopy(uint64_t dst, uint64_t src, uint64_t bytes) {
  const bool h2d = IsDevice(dst, bytes) && IsPinned(src, bytes);
  const bool d2h = IsDevice(src, bytes) && IsPinned(dst, bytes);
  if (!h2d && !d2h) return false;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  return true;
}

// One kernel copy: device memory to device memory (a staging window) as well
// as either direction between device and pinned host memory.
inline bool KernelCopy(uint64_t dst, uint64_t src, uint64_t bytes) {
  if (IsDevice(dst, bytes) && IsDevice(src, bytes)) {
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    return true;
  }
  return CheckedCopy(dst, src, bytes);
}

#define FAKE_ENTER(name) \
  if (CUresult r_ = Enter(name); r_ != CUDA_SUCCESS) return r_

// Memory, copies and kernels (fake_cuda_memory.cc).
CUresult CUDAAPI FakeMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream);
CUresult CUDAAPI FakeMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes,
                                     CUstream stream);
CUresult CUDAAPI FakeMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes);
CUresult CUDAAPI FakeMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes);
CUresult CUDAAPI FakeMemAlloc(CUdeviceptr* p, size_t bytes);
CUresult CUDAAPI FakeMemFree(CUdeviceptr p);
CUresult CUDAAPI FakeMemsetD8(CUdeviceptr p, unsigned char value, size_t bytes);
CUresult CUDAAPI FakeMemGetInfo(size_t* free_bytes, size_t* total_bytes);
CUresult CUDAAPI FakeMemAllocHost(void** p, size_t bytes);
CUresult CUDAAPI FakeMemFreeHost(void* p);
// Legacy IPC (fake_cuda_ipc.cc).
CUresult CUDAAPI FakeIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr device);
CUresult CUDAAPI FakeIpcOpenMemHandle(CUdeviceptr* device, CUipcMemHandle handle,
                                      unsigned int flags);
CUresult CUDAAPI FakeIpcCloseMemHandle(CUdeviceptr device);
CUresult CUDAAPI FakeMemGetAddressRange(CUdeviceptr* base, size_t* bytes, CUdeviceptr device);
CUresult CUDAAPI FakePointerGetAttribute(void* data, CUpointer_attribute attribute,
                                         CUdeviceptr device);
CUresult CUDAAPI FakeMemHostRegister(void* p, size_t bytes, unsigned int flags);
CUresult CUDAAPI FakeMemHostUnregister(void* p);
CUresult CUDAAPI FakeMemHostGetDevicePointer(CUdeviceptr* out, void* p, unsigned int flags);
CUresult CUDAAPI FakeModuleLoadData(CUmodule* module, const void* image);
CUresult CUDAAPI FakeModuleUnload(CUmodule);
CUresult CUDAAPI FakeModuleGetFunction(CUfunction* fn, CUmodule, const char* name);
CUresult CUDAAPI FakeLaunchKernel(CUfunction fn, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                  unsigned block_x, unsigned block_y, unsigned block_z, unsigned,
                                  CUstream stream, void** params, void** extra);
CUresult CUDAAPI FakeMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                      size_t count, CUmemcpyAttributes* attrs, size_t* attr_idxs,
                                      size_t num_attrs, CUstream stream);
CUresult CUDAAPI FakeMemcpy3DBatchAsync(size_t count, CUDA_MEMCPY3D_BATCH_OP* ops,
                                        unsigned long long flags, CUstream stream);

}  // namespace fake_cuda
