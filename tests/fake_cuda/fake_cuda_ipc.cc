// The fake CUDA driver's legacy IPC entry points (see fake_cuda.cc). A handle
// holds the allocation's base address; opening one checks the allocation is
// still there and returns that address (one process plays both sides, which
// the real driver refuses: its tests run two processes on a GPU).
#include <cstring>

#include "tests/fake_cuda/fake_cuda_state.h"

namespace fake_cuda {

namespace {

// Open handles: address -> times opened.
std::map<uint64_t, int>& Opened() {
  static std::map<uint64_t, int> opened;
  return opened;
}

}  // namespace

CUresult CUDAAPI FakeIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr device) {
  FAKE_ENTER("cuIpcGetMemHandle");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(S().mu);
  if (S().device.count(device) == 0) return CUDA_ERROR_INVALID_VALUE;  // not a cuMemAlloc base
  std::memset(handle, 0, sizeof *handle);
  const uint64_t base = device;
  std::memcpy(handle->reserved, &base, sizeof base);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeIpcOpenMemHandle(CUdeviceptr* device, CUipcMemHandle handle,
                                      unsigned int /*flags*/) {
  FAKE_ENTER("cuIpcOpenMemHandle");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  uint64_t base = 0;
  std::memcpy(&base, handle.reserved, sizeof base);
  std::lock_guard lock(S().mu);
  if (S().device.count(base) == 0) return CUDA_ERROR_INVALID_VALUE;  // freed, or never one
  ++Opened()[base];
  *device = base;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeIpcCloseMemHandle(CUdeviceptr device) {
  FAKE_ENTER("cuIpcCloseMemHandle");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(S().mu);
  auto it = Opened().find(device);
  if (it == Opened().end()) return CUDA_ERROR_INVALID_VALUE;
  if (--it->second == 0) Opened().erase(it);
  return CUDA_SUCCESS;
}

}  // namespace fake_cuda
