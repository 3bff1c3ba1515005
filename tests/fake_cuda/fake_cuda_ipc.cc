// The fake CUDA driver's legacy IPC entry points (see fake_cuda.cc). A handle
// holds the allocation's base address. Opening one maps the same memory a
// second time at a new address (device memory is shared anonymous memory,
// fake_cuda_memory.cc), so, as with the real driver, the importer's address
// differs from the exporter's while both see the same bytes; the alias is a
// device region of its own until closed, after which a copy through it
// fails and its address is never handed out again. One process plays both sides (the real driver
// refuses that: its tests run two processes on a GPU), and a block opens once per process (the real
// driver refuses a second open of a block in one context).
#include <sys/mman.h>

#include <cstring>

#include "tests/fake_cuda/fake_cuda_state.h"

namespace fake_cuda {

namespace {

// Open aliases: alias address -> the allocation's base.
std::map<uint64_t, uint64_t>& Opened() {
  static std::map<uint64_t, uint64_t> opened;
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
  auto it = S().device.find(base);
  if (it == S().device.end()) return CUDA_ERROR_INVALID_VALUE;  // freed, or never one
  for (const auto& [alias, of] : Opened()) {
    if (of == base) return CUDA_ERROR_ALREADY_MAPPED;
  }
  const uint64_t bytes = it->second.bytes;
  // old_size 0: a second mapping of the same shared pages.
  void* alias = ::mremap(reinterpret_cast<void*>(base), 0, MappedBytes(bytes), MREMAP_MAYMOVE);
  if (alias == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const auto at = reinterpret_cast<uint64_t>(alias);
  Opened()[at] = base;
  S().device[at] = {bytes};
  S().values["ipc_opened"] = static_cast<long long>(Opened().size());
  *device = at;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeIpcCloseMemHandle(CUdeviceptr device) {
  FAKE_ENTER("cuIpcCloseMemHandle");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(S().mu);
  auto it = Opened().find(device);
  if (it == Opened().end()) return CUDA_ERROR_INVALID_VALUE;
  auto region = S().device.find(device);
  // The address stays reserved (inaccessible) for good, so a later open
  // never lands where an earlier one was: a stale address cannot pass for
  // the new mapping in a test.
  (void)::mmap(reinterpret_cast<void*>(device), MappedBytes(region->second.bytes), PROT_NONE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  S().device.erase(region);
  Opened().erase(it);
  S().values["ipc_opened"] = static_cast<long long>(Opened().size());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemGetAddressRange(CUdeviceptr* base, size_t* bytes, CUdeviceptr device) {
  FAKE_ENTER("cuMemGetAddressRange");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(S().mu);
  auto it = S().device.upper_bound(device);
  if (it == S().device.begin()) return CUDA_ERROR_NOT_FOUND;
  --it;
  if (device >= it->first + it->second.bytes) return CUDA_ERROR_NOT_FOUND;
  if (base != nullptr) *base = it->first;
  if (bytes != nullptr) *bytes = it->second.bytes;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakePointerGetAttribute(void* data, CUpointer_attribute attribute,
                                         CUdeviceptr device) {
  FAKE_ENTER("cuPointerGetAttribute");
  if (attribute != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) return CUDA_ERROR_NOT_SUPPORTED;
  if (!IsDevice(device, 1)) return CUDA_ERROR_INVALID_VALUE;
  *static_cast<int*>(data) = 0;
  return CUDA_SUCCESS;
}

}  // namespace fake_cuda
