// A test double of the CUDA driver (libcuda.so.1) for machines without a GPU,
// loaded by CudaDriver::Load through the same dlopen + cuGetProcAddress_v2
// path as the real driver. "Device" memory is host memory and copies happen
// at once with memcpy. It rejects what strata must never do: copies touching
// memory that is not device memory on one side and registered or pinned host
// memory on the other, calls without a current context, batched copies with
// a missing or invalid attribute, a legacy (NULL) stream, or a zero extent.
// It counts calls per entry point and fails chosen calls on request
// (strata_fake_cuda_* below). No VMM entry points: strata must cope.
#include <cstdio>

#include "tests/fake_cuda/fake_cuda_state.h"

namespace fake_cuda {

State& S() {
  static State s;
  return s;
}

thread_local std::vector<CUcontext> context_stack;

namespace {

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

// UUID bytes i = 0x10 * (ordinal + 1) + i: distinct per device, stable.
CUresult CUDAAPI FakeDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  FAKE_ENTER("cuDeviceGetUuid");
  for (int i = 0; i < 16; ++i) uuid->bytes[i] = static_cast<char>(0x10 * (device + 1) + i);
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

// Work runs when queued, so every event has already happened.
CUresult CUDAAPI FakeStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  FAKE_ENTER("cuStreamWaitEvent");
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (stream == nullptr || event == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
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
      {"cuDeviceGetUuid", reinterpret_cast<void*>(&FakeDeviceGetUuid)},
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
      {"cuStreamWaitEvent", reinterpret_cast<void*>(&FakeStreamWaitEvent)},
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
      {"cuIpcGetMemHandle", reinterpret_cast<void*>(&FakeIpcGetMemHandle)},
      {"cuIpcOpenMemHandle", reinterpret_cast<void*>(&FakeIpcOpenMemHandle)},
      {"cuIpcCloseMemHandle", reinterpret_cast<void*>(&FakeIpcCloseMemHandle)},
      {"cuMemGetAddressRange", reinterpret_cast<void*>(&FakeMemGetAddressRange)},
      {"cuPointerGetAttribute", reinterpret_cast<void*>(&FakePointerGetAttribute)},
      {"cuMemHostRegister", reinterpret_cast<void*>(&FakeMemHostRegister)},
      {"cuMemHostUnregister", reinterpret_cast<void*>(&FakeMemHostUnregister)},
      {"cuMemHostGetDevicePointer", reinterpret_cast<void*>(&FakeMemHostGetDevicePointer)},
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
}  // namespace fake_cuda

using fake_cuda::Lookup;
using fake_cuda::S;

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

__attribute__((visibility("default"))) void strata_fake_cuda_set_value(const char* key,
                                                                       long long value) {
  std::lock_guard lock(S().mu);
  S().values[key] = value;
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
