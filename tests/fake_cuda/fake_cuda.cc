// A test double of the CUDA driver (libcuda.so.1) for machines without a GPU,
// loaded by CudaDriver::Load through the same dlopen + cuGetProcAddress_v2
// path as the real driver. "Device" memory is host memory and copies happen
// at once with memcpy. It rejects what strata must never do: copies touching
// memory that is not device memory on one side and registered or pinned host
// memory on the other, calls without a current context, batched copies with
// a missing or invalid attribute, a legacy (NULL) stream, or a zero extent.
// It counts calls per entry point and fails chosen calls on request
// (strata_fake_cuda_* below). No VMM entry points: strata must cope.
#include <cuda.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

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

State& S() {
  static State s;
  return s;
}

thread_local std::vector<CUcontext> context_stack;

char context_token[8];
char stream_token[8];
char event_token[8];
char module_token[8];
char function_token[8];

CUcontext FakeContext() { return reinterpret_cast<CUcontext>(context_token); }

// Counts the call; returns an injected error, or CUDA_SUCCESS.
CUresult Enter(const char* name) {
  std::lock_guard lock(S().mu);
  S().calls[name]++;
  auto it = S().inject.find(name);
  if (it == S().inject.end()) return CUDA_SUCCESS;
  CUresult r = it->second;
  S().inject.erase(it);
  return r;
}

bool HasContext() { return !context_stack.empty() && context_stack.back() != nullptr; }

bool Within(const std::map<uint64_t, Region>& regions, uint64_t address, uint64_t bytes) {
  auto it = regions.upper_bound(address);
  if (it == regions.begin()) return false;
  --it;
  return address >= it->first && address + bytes <= it->first + it->second.bytes;
}

bool IsDevice(uint64_t address, uint64_t bytes) {
  std::lock_guard lock(S().mu);
  return Within(S().device, address, bytes);
}

bool IsPinned(uint64_t address, uint64_t bytes) {
  std::lock_guard lock(S().mu);
  return Within(S().pinned, address, bytes);
}

// One copy between device memory and pinned host memory, in either direction.
bool CheckedCopy(uint64_t dst, uint64_t src, uint64_t bytes) {
  const bool h2d = IsDevice(dst, bytes) && IsPinned(src, bytes);
  const bool d2h = IsDevice(src, bytes) && IsPinned(dst, bytes);
  if (!h2d && !d2h) return false;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  return true;
}

#define FAKE_ENTER(name) \
  if (CUresult r_ = Enter(name); r_ != CUDA_SUCCESS) return r_

CUresult CUDAAPI FakeInit(unsigned int) {
  FAKE_ENTER("cuInit");
  std::lock_guard lock(S().mu);
  return S().init_result;
}

CUresult CUDAAPI FakeDriverGetVersion(int* version) {
  FAKE_ENTER("cuDriverGetVersion");
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_ILLEGAL_ADDRESS: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
      *name = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED";
      return CUDA_SUCCESS;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
      *name = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED";
      return CUDA_SUCCESS;
    default: *name = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI FakeGetErrorString(CUresult error, const char** text) {
  const char* name = nullptr;
  if (FakeGetErrorName(error, &name) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  *text = "fake driver error";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeDeviceGetCount(int* count) {
  FAKE_ENTER("cuDeviceGetCount");
  std::lock_guard lock(S().mu);
  *count = S().device_count;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeDeviceGet(CUdevice* device, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  std::lock_guard lock(S().mu);
  if (ordinal < 0 || ordinal >= S().device_count) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeDeviceGetName(char* name, int length, CUdevice) {
  FAKE_ENTER("cuDeviceGetName");
  std::snprintf(name, static_cast<size_t>(length), "%s", "Strata fake CUDA device");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  FAKE_ENTER("cuDeviceGetAttribute");
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *value = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 4; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakePrimaryCtxRetain(CUcontext* ctx, CUdevice) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  *ctx = FakeContext();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakePrimaryCtxRelease(CUdevice) {
  FAKE_ENTER("cuDevicePrimaryCtxRelease");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeCtxSetCurrent(CUcontext ctx) {
  FAKE_ENTER("cuCtxSetCurrent");
  if (ctx == nullptr) {
    if (!context_stack.empty()) context_stack.pop_back();
  } else if (context_stack.empty()) {
    context_stack.push_back(ctx);
  } else {
    context_stack.back() = ctx;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeCtxPushCurrent(CUcontext ctx) {
  FAKE_ENTER("cuCtxPushCurrent");
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  context_stack.push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeCtxPopCurrent(CUcontext* ctx) {
  FAKE_ENTER("cuCtxPopCurrent");
  if (context_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  *ctx = context_stack.back();
  context_stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeStreamPriorityRange(int* least, int* greatest) {
  FAKE_ENTER("cuCtxGetStreamPriorityRange");
  *least = 0;
  *greatest = -5;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeStreamCreateWithPriority(CUstream* stream, unsigned int flags, int priority) {
  FAKE_ENTER("cuStreamCreateWithPriority");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(S().mu);
  S().values["stream_flags"] = flags;
  S().values["stream_priority"] = priority;
  *stream = reinterpret_cast<CUstream>(stream_token);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeStreamSynchronize(CUstream) {
  FAKE_ENTER("cuStreamSynchronize");
  return HasContext() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult CUDAAPI FakeStreamDestroy(CUstream) {
  FAKE_ENTER("cuStreamDestroy");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeEventCreate(CUevent* event, unsigned int flags) {
  FAKE_ENTER("cuEventCreate");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(S().mu);
  S().values["event_flags"] = flags;
  *event = reinterpret_cast<CUevent>(event_token);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeEventRecord(CUevent, CUstream) {
  FAKE_ENTER("cuEventRecord");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeEventSynchronize(CUevent) {
  FAKE_ENTER("cuEventSynchronize");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeEventDestroy(CUevent) {
  FAKE_ENTER("cuEventDestroy");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  FAKE_ENTER("cuMemcpyDtoHAsync");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (stream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return CheckedCopy(reinterpret_cast<uint64_t>(dst), src, bytes) ? CUDA_SUCCESS
                                                                  : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI FakeMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes,
                                     CUstream stream) {
  FAKE_ENTER("cuMemcpyHtoDAsync");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (stream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return CheckedCopy(dst, reinterpret_cast<uint64_t>(src), bytes) ? CUDA_SUCCESS
                                                                  : CUDA_ERROR_INVALID_VALUE;
}

// Synchronous copies take any host memory.
CUresult CUDAAPI FakeMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  FAKE_ENTER("cuMemcpyDtoH");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!IsDevice(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  FAKE_ENTER("cuMemcpyHtoD");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!IsDevice(dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemAlloc(CUdeviceptr* p, size_t bytes) {
  FAKE_ENTER("cuMemAlloc");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void* m = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (m == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(S().mu);
  S().device[reinterpret_cast<uint64_t>(m)] = {bytes};
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemFree(CUdeviceptr p) {
  FAKE_ENTER("cuMemFree");
  std::lock_guard lock(S().mu);
  if (S().device.erase(p) == 0) return CUDA_ERROR_INVALID_VALUE;
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemsetD8(CUdeviceptr p, unsigned char value, size_t bytes) {
  FAKE_ENTER("cuMemsetD8");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!IsDevice(p, bytes)) return CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void*>(p), value, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  FAKE_ENTER("cuMemGetInfo");
  *free_bytes = size_t{64} << 30;
  *total_bytes = size_t{80} << 30;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemAllocHost(void** p, size_t bytes) {
  FAKE_ENTER("cuMemAllocHost");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  void* m = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (m == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(S().mu);
  S().pinned[reinterpret_cast<uint64_t>(m)] = {bytes};
  *p = m;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemFreeHost(void* p) {
  FAKE_ENTER("cuMemFreeHost");
  std::lock_guard lock(S().mu);
  if (S().pinned.erase(reinterpret_cast<uint64_t>(p)) == 0) return CUDA_ERROR_INVALID_VALUE;
  std::free(p);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemHostRegister(void* p, size_t bytes, unsigned int flags) {
  FAKE_ENTER("cuMemHostRegister");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(S().mu);
  if (Within(S().pinned, reinterpret_cast<uint64_t>(p), 1)) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  S().values["register_flags"] = flags;
  S().pinned[reinterpret_cast<uint64_t>(p)] = {bytes};
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemHostUnregister(void* p) {
  FAKE_ENTER("cuMemHostUnregister");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(S().mu);
  if (S().pinned.erase(reinterpret_cast<uint64_t>(p)) == 0) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeModuleLoadData(CUmodule* module, const void* image) {
  FAKE_ENTER("cuModuleLoadData");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  const char* text = static_cast<const char*>(image);
  if (text == nullptr || std::strstr(text, ".entry strata_copy_pieces") == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;  // not the PTX strata embeds
  }
  *module = reinterpret_cast<CUmodule>(module_token);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeModuleUnload(CUmodule) {
  FAKE_ENTER("cuModuleUnload");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeModuleGetFunction(CUfunction* fn, CUmodule, const char* name) {
  FAKE_ENTER("cuModuleGetFunction");
  if (std::strcmp(name, "strata_copy_pieces") != 0) return CUDA_ERROR_NOT_FOUND;
  *fn = reinterpret_cast<CUfunction>(function_token);
  return CUDA_SUCCESS;
}

// Runs strata_copy_pieces(const PieceCopy* pieces, unsigned count) on the host.
CUresult CUDAAPI FakeLaunchKernel(CUfunction fn, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                  unsigned block_x, unsigned block_y, unsigned block_z, unsigned,
                                  CUstream stream, void** params, void** extra) {
  FAKE_ENTER("cuLaunchKernel");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (fn != reinterpret_cast<CUfunction>(function_token) || stream == nullptr ||
      params == nullptr || extra != nullptr || grid_x == 0 || grid_y != 1 || grid_z != 1 ||
      block_x == 0 || block_x > 1024 || block_y != 1 || block_z != 1) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  struct PieceCopy {
    uint64_t src, dst, bytes;
  };
  const PieceCopy* pieces = *static_cast<const PieceCopy* const*>(params[0]);
  const unsigned count = *static_cast<const unsigned*>(params[1]);
  if (!IsPinned(reinterpret_cast<uint64_t>(pieces), sizeof(PieceCopy) * count)) {
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  for (unsigned i = 0; i < count; ++i) {
    if (!CheckedCopy(pieces[i].dst, pieces[i].src, pieces[i].bytes))
      return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI FakeMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                      size_t count, CUmemcpyAttributes* attrs, size_t* attr_idxs,
                                      size_t num_attrs, CUstream stream) {
  FAKE_ENTER("cuMemcpyBatchAsync");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (count == 0 || stream == nullptr || num_attrs == 0 || num_attrs > count || attr_idxs[0] != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t a = 0; a < num_attrs; ++a) {
    if (attrs[a].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_INVALID)
      return CUDA_ERROR_INVALID_VALUE;
  }
  {
    std::lock_guard lock(S().mu);
    S().values["batch_entries_max"] =
        std::max<long long>(S().values["batch_entries_max"], static_cast<long long>(count));
  }
  for (size_t i = 0; i < count; ++i) {
    if (!CheckedCopy(dsts[i], srcs[i], sizes[i])) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

bool CopyOperand2D(const CUmemcpy3DOperand& o, const CUextent3D& e, uint64_t& base,
                   uint64_t& pitch) {
  if (o.type != CU_MEMCPY_OPERAND_TYPE_POINTER) return false;
  pitch = o.op.ptr.rowLength == 0 ? e.width : o.op.ptr.rowLength;
  if (pitch < e.width) return false;
  base = o.op.ptr.ptr;
  return true;
}

CUresult CUDAAPI FakeMemcpy3DBatchAsync(size_t count, CUDA_MEMCPY3D_BATCH_OP* ops,
                                        unsigned long long flags, CUstream stream) {
  FAKE_ENTER("cuMemcpy3DBatchAsync");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (count == 0 || stream == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    const CUDA_MEMCPY3D_BATCH_OP& op = ops[i];
    const CUextent3D& e = op.extent;
    if (e.width == 0 || e.height == 0 || e.depth != 1 ||
        op.srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_INVALID) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t src = 0, src_pitch = 0, dst = 0, dst_pitch = 0;
    if (!CopyOperand2D(op.src, e, src, src_pitch) || !CopyOperand2D(op.dst, e, dst, dst_pitch)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t row = 0; row < e.height; ++row) {
      if (!CheckedCopy(dst + row * dst_pitch, src + row * src_pitch, e.width)) {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
  }
  return CUDA_SUCCESS;
}

void* Lookup(const char* symbol) {
  static const std::map<std::string, void*> table = {
      {"cuInit", reinterpret_cast<void*>(&FakeInit)},
      {"cuDriverGetVersion", reinterpret_cast<void*>(&FakeDriverGetVersion)},
      {"cuGetErrorName", reinterpret_cast<void*>(&FakeGetErrorName)},
      {"cuGetErrorString", reinterpret_cast<void*>(&FakeGetErrorString)},
      {"cuDeviceGet", reinterpret_cast<void*>(&FakeDeviceGet)},
      {"cuDeviceGetCount", reinterpret_cast<void*>(&FakeDeviceGetCount)},
      {"cuDeviceGetName", reinterpret_cast<void*>(&FakeDeviceGetName)},
      {"cuDeviceGetAttribute", reinterpret_cast<void*>(&FakeDeviceGetAttribute)},
      {"cuDevicePrimaryCtxRetain", reinterpret_cast<void*>(&FakePrimaryCtxRetain)},
      {"cuDevicePrimaryCtxRelease", reinterpret_cast<void*>(&FakePrimaryCtxRelease)},
      {"cuCtxSetCurrent", reinterpret_cast<void*>(&FakeCtxSetCurrent)},
      {"cuCtxPushCurrent", reinterpret_cast<void*>(&FakeCtxPushCurrent)},
      {"cuCtxPopCurrent", reinterpret_cast<void*>(&FakeCtxPopCurrent)},
      {"cuCtxGetStreamPriorityRange", reinterpret_cast<void*>(&FakeStreamPriorityRange)},
      {"cuStreamCreateWithPriority", reinterpret_cast<void*>(&FakeStreamCreateWithPriority)},
      {"cuStreamSynchronize", reinterpret_cast<void*>(&FakeStreamSynchronize)},
      {"cuStreamDestroy", reinterpret_cast<void*>(&FakeStreamDestroy)},
      {"cuEventCreate", reinterpret_cast<void*>(&FakeEventCreate)},
      {"cuEventRecord", reinterpret_cast<void*>(&FakeEventRecord)},
      {"cuEventSynchronize", reinterpret_cast<void*>(&FakeEventSynchronize)},
      {"cuEventDestroy", reinterpret_cast<void*>(&FakeEventDestroy)},
      {"cuMemcpyDtoHAsync", reinterpret_cast<void*>(&FakeMemcpyDtoHAsync)},
      {"cuMemcpyHtoDAsync", reinterpret_cast<void*>(&FakeMemcpyHtoDAsync)},
      {"cuMemcpyDtoH", reinterpret_cast<void*>(&FakeMemcpyDtoH)},
      {"cuMemcpyHtoD", reinterpret_cast<void*>(&FakeMemcpyHtoD)},
      {"cuMemAlloc", reinterpret_cast<void*>(&FakeMemAlloc)},
      {"cuMemFree", reinterpret_cast<void*>(&FakeMemFree)},
      {"cuMemsetD8", reinterpret_cast<void*>(&FakeMemsetD8)},
      {"cuMemGetInfo", reinterpret_cast<void*>(&FakeMemGetInfo)},
      {"cuMemAllocHost", reinterpret_cast<void*>(&FakeMemAllocHost)},
      {"cuMemFreeHost", reinterpret_cast<void*>(&FakeMemFreeHost)},
      {"cuMemHostRegister", reinterpret_cast<void*>(&FakeMemHostRegister)},
      {"cuMemHostUnregister", reinterpret_cast<void*>(&FakeMemHostUnregister)},
      {"cuModuleLoadData", reinterpret_cast<void*>(&FakeModuleLoadData)},
      {"cuModuleUnload", reinterpret_cast<void*>(&FakeModuleUnload)},
      {"cuModuleGetFunction", reinterpret_cast<void*>(&FakeModuleGetFunction)},
      {"cuLaunchKernel", reinterpret_cast<void*>(&FakeLaunchKernel)},
      {"cuMemcpyBatchAsync", reinterpret_cast<void*>(&FakeMemcpyBatchAsync)},
      {"cuMemcpy3DBatchAsync", reinterpret_cast<void*>(&FakeMemcpy3DBatchAsync)},
  };
  auto it = table.find(symbol);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int, cuuint64_t, CUdriverProcAddressQueryResult* status) {
  *pfn = Lookup(symbol);
  if (status != nullptr) {
    *status = *pfn != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  return *pfn != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

// Test controls.
__attribute__((visibility("default"))) void strata_fake_cuda_inject(const char* function,
                                                                    int result) {
  std::lock_guard lock(S().mu);
  S().inject[function] = static_cast<CUresult>(result);
}

__attribute__((visibility("default"))) unsigned long long strata_fake_cuda_calls(
    const char* function) {
  std::lock_guard lock(S().mu);
  auto it = S().calls.find(function);
  return it == S().calls.end() ? 0 : it->second;
}

__attribute__((visibility("default"))) long long strata_fake_cuda_value(const char* key) {
  std::lock_guard lock(S().mu);
  auto it = S().values.find(key);
  return it == S().values.end() ? -1 : it->second;
}

__attribute__((visibility("default"))) void strata_fake_cuda_reset() {
  std::lock_guard lock(S().mu);
  S().calls.clear();
  S().inject.clear();
  S().values.clear();
  S().device_count = 1;
  S().init_result = CUDA_SUCCESS;
}

__attribute__((visibility("default"))) void strata_fake_cuda_set_device_count(int count) {
  std::lock_guard lock(S().mu);
  S().device_count = count;
}

__attribute__((visibility("default"))) void strata_fake_cuda_set_init_result(int result) {
  std::lock_guard lock(S().mu);
  S().init_result = static_cast<CUresult>(result);
}

}  // extern "C"
