#include "cuda/driver_api.h"

#include <dlfcn.h>

#include <cstdio>

#include "cuda/driver_table.h"

namespace strata {

CudaDriver::CudaDriver() : api_(std::make_unique<Api>()) {}
CudaDriver::~CudaDriver() = default;

#if STRATA_HAVE_CUDA_HEADERS

namespace {

// Resolves `symbol` at ABI `version` into `out`; false when the driver lacks it.
template <typename Fn>
bool Resolve(PFN_cuGetProcAddress_v12000 get_proc, const char* symbol, int version, Fn& out) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = get_proc(symbol, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
  if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || fn == nullptr) return false;
  out = reinterpret_cast<Fn>(fn);
  return true;
}

StatusCode CodeFor(CUresult r) {
  switch (r) {
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_SYSTEM_NOT_READY:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_DEVICE_NOT_LICENSED: return StatusCode::kUnavailable;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: return StatusCode::kInvalidArgument;
    case CUDA_ERROR_NOT_SUPPORTED: return StatusCode::kFailedPrecondition;
    default: return StatusCode::kIoError;
  }
}

}  // namespace

Result<std::shared_ptr<const CudaDriver>> CudaDriver::Load(const std::string& library) {
  // RTLD_NODELETE: the handle is never closed (libcuda runs its own threads).
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Status::Unavailable("no CUDA driver: dlopen(" + library +
                               "): " + (why != nullptr ? why : "unknown error"));
  }
  auto get_proc =
      reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(handle, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    return Status::Unavailable("no CUDA driver: " + library +
                               " does not export cuGetProcAddress_v2 (not a CUDA driver, or one "
                               "older than CUDA 12.0)");
  }
  std::shared_ptr<CudaDriver> d(new CudaDriver());
  d->library_ = library;
  d->api_->library = handle;
  Api& a = *d->api_;
#define STRATA_CUDA_RESOLVE_REQUIRED(name, version)                    \
  if (!Resolve(get_proc, #name, version, a.name##_)) {                 \
    return Status::Unavailable("no CUDA driver: " + library +          \
                               " lacks " #name " (ABI " #version ")"); \
  }
  STRATA_CUDA_REQUIRED_ENTRY_POINTS(STRATA_CUDA_RESOLVE_REQUIRED)
#undef STRATA_CUDA_RESOLVE_REQUIRED
#define STRATA_CUDA_RESOLVE_OPTIONAL(name, version) \
  (void)Resolve(get_proc, #name, version, a.name##_);
  STRATA_CUDA_VMM_ENTRY_POINTS(STRATA_CUDA_RESOLVE_OPTIONAL)
  STRATA_CUDA_SHARING_ENTRY_POINTS(STRATA_CUDA_RESOLVE_OPTIONAL)
  STRATA_CUDA_IPC_ENTRY_POINTS(STRATA_CUDA_RESOLVE_OPTIONAL)
  if (a.cuDriverGetVersion_(&a.version) != CUDA_SUCCESS) a.version = 0;
  if (a.version >= kCudaBatchCopyDriverVersion) {
    STRATA_CUDA_BATCH_ENTRY_POINTS(STRATA_CUDA_RESOLVE_OPTIONAL)
  }
#undef STRATA_CUDA_RESOLVE_OPTIONAL
  Status init = d->Check(a.cuInit_(0), "cuInit");
  if (!init.ok()) {
    return Status::Unavailable("no usable CUDA device: " + init.message());
  }
  return std::shared_ptr<const CudaDriver>(std::move(d));
}

int CudaDriver::version() const { return api_->version; }

Status CudaDriver::Check(int result, const char* call) const {
  auto r = static_cast<CUresult>(result);
  if (r == CUDA_SUCCESS) return Status::Ok();
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_->cuGetErrorName_ == nullptr || api_->cuGetErrorName_(r, &name) != CUDA_SUCCESS) {
    name = nullptr;
  }
  if (api_->cuGetErrorString_ == nullptr || api_->cuGetErrorString_(r, &text) != CUDA_SUCCESS) {
    text = nullptr;
  }
  std::string m(call);
  m += ": ";
  m += name != nullptr ? name : "CUDA error " + std::to_string(result);
  if (text != nullptr) {
    m += " (";
    m += text;
    m += ")";
  }
  return Status(CodeFor(r), std::move(m));
}

Status CudaDriver::Missing(const char* call) const {
  return Status::FailedPrecondition(std::string(call) +
                                    ": not provided by the CUDA driver (version " +
                                    std::to_string(api_->version) + ", " + library_ + ")");
}

Result<int> CudaDriver::DeviceCount() const {
  int n = 0;
  STRATA_RETURN_IF_ERROR(Check(api_->cuDeviceGetCount_(&n), "cuDeviceGetCount"));
  return n;
}

Result<std::string> CudaDriver::DeviceName(int ordinal) const {
  CUdevice dev = 0;
  STRATA_RETURN_IF_ERROR(Check(api_->cuDeviceGet_(&dev, ordinal), "cuDeviceGet"));
  char name[256] = {};
  STRATA_RETURN_IF_ERROR(
      Check(api_->cuDeviceGetName_(name, sizeof name - 1, dev), "cuDeviceGetName"));
  return std::string(name);
}

Result<std::string> CudaDriver::DeviceUuid(int ordinal) const {
  CUdevice dev = 0;
  STRATA_RETURN_IF_ERROR(Check(api_->cuDeviceGet_(&dev, ordinal), "cuDeviceGet"));
  CUuuid uuid{};
  STRATA_RETURN_IF_ERROR(Check(api_->cuDeviceGetUuid_(&uuid, dev), "cuDeviceGetUuid"));
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    text += hex;
  }
  return text;
}

Result<int> CudaDriver::DeviceAttribute(int ordinal, CudaDeviceAttribute attribute) const {
  CUdevice_attribute a = CU_DEVICE_ATTRIBUTE_INTEGRATED;
  switch (attribute) {
    case CudaDeviceAttribute::kIntegrated: a = CU_DEVICE_ATTRIBUTE_INTEGRATED; break;
    case CudaDeviceAttribute::kHostNumaId: a = CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID; break;
    case CudaDeviceAttribute::kUnifiedAddressing: a = CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING; break;
    case CudaDeviceAttribute::kHostPointerForRegisteredMemory:
      a = CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM;
      break;
    case CudaDeviceAttribute::kMaxPitch: a = CU_DEVICE_ATTRIBUTE_MAX_PITCH; break;
    case CudaDeviceAttribute::kMultiprocessorCount:
      a = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
      break;
  }
  CUdevice dev = 0;
  STRATA_RETURN_IF_ERROR(Check(api_->cuDeviceGet_(&dev, ordinal), "cuDeviceGet"));
  int value = 0;
  STRATA_RETURN_IF_ERROR(
      Check(api_->cuDeviceGetAttribute_(&value, a, dev), "cuDeviceGetAttribute"));
  return value;
}

Result<CudaContext> CudaDriver::RetainPrimaryContext(int ordinal) const {
  CUdevice dev = 0;
  STRATA_RETURN_IF_ERROR(Check(api_->cuDeviceGet_(&dev, ordinal), "cuDeviceGet"));
  CUcontext ctx = nullptr;
  STRATA_RETURN_IF_ERROR(
      Check(api_->cuDevicePrimaryCtxRetain_(&ctx, dev), "cuDevicePrimaryCtxRetain"));
  return ctx;
}

Status CudaDriver::ReleasePrimaryContext(int ordinal) const {
  CUdevice dev = 0;
  STRATA_RETURN_IF_ERROR(Check(api_->cuDeviceGet_(&dev, ordinal), "cuDeviceGet"));
  return Check(api_->cuDevicePrimaryCtxRelease_(dev), "cuDevicePrimaryCtxRelease");
}

Status CudaDriver::SetCurrentContext(CudaContext context) const {
  return Check(api_->cuCtxSetCurrent_(context), "cuCtxSetCurrent");
}

Status CudaDriver::PushContext(CudaContext context) const {
  return Check(api_->cuCtxPushCurrent_(context), "cuCtxPushCurrent");
}

Status CudaDriver::PopContext() const {
  CUcontext popped = nullptr;
  return Check(api_->cuCtxPopCurrent_(&popped), "cuCtxPopCurrent");
}

Result<CudaStream> CudaDriver::CreateStream(StreamPriority priority) const {
  int least = 0;
  int greatest = 0;
  STRATA_RETURN_IF_ERROR(
      Check(api_->cuCtxGetStreamPriorityRange_(&least, &greatest), "cuCtxGetStreamPriorityRange"));
  CUstream stream = nullptr;
  STRATA_RETURN_IF_ERROR(Check(
      api_->cuStreamCreateWithPriority_(&stream, CU_STREAM_NON_BLOCKING,
                                        priority == StreamPriority::kGreatest ? greatest : least),
      "cuStreamCreateWithPriority"));
  return stream;
}

Status CudaDriver::SynchronizeStream(CudaStream stream) const {
  return Check(api_->cuStreamSynchronize_(stream), "cuStreamSynchronize");
}

Status CudaDriver::DestroyStream(CudaStream stream) const {
  return Check(api_->cuStreamDestroy_(stream), "cuStreamDestroy");
}

Result<CudaEvent> CudaDriver::CreateBlockingEvent() const {
  CUevent event = nullptr;
  STRATA_RETURN_IF_ERROR(
      Check(api_->cuEventCreate_(&event, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING),
            "cuEventCreate"));
  return event;
}

Status CudaDriver::RecordEvent(CudaEvent event, CudaStream stream) const {
  return Check(api_->cuEventRecord_(event, stream), "cuEventRecord");
}

Status CudaDriver::SynchronizeEvent(CudaEvent event) const {
  return Check(api_->cuEventSynchronize_(event), "cuEventSynchronize");
}

Status CudaDriver::DestroyEvent(CudaEvent event) const {
  return Check(api_->cuEventDestroy_(event), "cuEventDestroy");
}

Status CudaDriver::StreamWaitEvent(CudaStream stream, CudaEvent event) const {
  return Check(api_->cuStreamWaitEvent_(stream, event, CU_EVENT_WAIT_DEFAULT), "cuStreamWaitEvent");
}

#else  // built without the CUDA headers: every load fails, nothing else is reachable

Result<std::shared_ptr<const CudaDriver>> CudaDriver::Load(const std::string&) {
  return Status::Unavailable(
      "no CUDA driver: strata was built without CUDA headers (install the CUDA Toolkit headers "
      "and rebuild)");
}
int CudaDriver::version() const { return 0; }
Status CudaDriver::Check(int, const char* call) const { return Missing(call); }
Status CudaDriver::Missing(const char* call) const {
  return Status::Unavailable(std::string(call) + ": built without CUDA headers");
}
Result<int> CudaDriver::DeviceCount() const { return Missing("cuDeviceGetCount"); }
Result<std::string> CudaDriver::DeviceName(int) const { return Missing("cuDeviceGetName"); }
Result<std::string> CudaDriver::DeviceUuid(int) const { return Missing("cuDeviceGetUuid"); }
Result<int> CudaDriver::DeviceAttribute(int, CudaDeviceAttribute) const {
  return Missing("cuDeviceGetAttribute");
}
Result<CudaContext> CudaDriver::RetainPrimaryContext(int) const {
  return Missing("cuDevicePrimaryCtxRetain");
}
Status CudaDriver::ReleasePrimaryContext(int) const { return Missing("cuDevicePrimaryCtxRelease"); }
Status CudaDriver::SetCurrentContext(CudaContext) const { return Missing("cuCtxSetCurrent"); }
Status CudaDriver::PushContext(CudaContext) const { return Missing("cuCtxPushCurrent"); }
Status CudaDriver::PopContext() const { return Missing("cuCtxPopCurrent"); }
Result<CudaStream> CudaDriver::CreateStream(StreamPriority) const {
  return Missing("cuStreamCreateWithPriority");
}
Status CudaDriver::SynchronizeStream(CudaStream) const { return Missing("cuStreamSynchronize"); }
Status CudaDriver::DestroyStream(CudaStream) const { return Missing("cuStreamDestroy"); }
Result<CudaEvent> CudaDriver::CreateBlockingEvent() const { return Missing("cuEventCreate"); }
Status CudaDriver::RecordEvent(CudaEvent, CudaStream) const { return Missing("cuEventRecord"); }
Status CudaDriver::SynchronizeEvent(CudaEvent) const { return Missing("cuEventSynchronize"); }
Status CudaDriver::DestroyEvent(CudaEvent) const { return Missing("cuEventDestroy"); }
Status CudaDriver::StreamWaitEvent(CudaStream, CudaEvent) const {
  return Missing("cuStreamWaitEvent");
}

#endif  // STRATA_HAVE_CUDA_HEADERS

ContextGuard::ContextGuard(const CudaDriver& driver, CudaContext context)
    : driver_(driver), status_(driver.PushContext(context)) {}

ContextGuard::~ContextGuard() {
  if (status_.ok()) (void)driver_.PopContext();
}

Result<std::unique_ptr<PrimaryContext>> PrimaryContext::Retain(
    std::shared_ptr<const CudaDriver> driver, int ordinal) {
  STRATA_ASSIGN_OR_RETURN(CudaContext ctx, driver->RetainPrimaryContext(ordinal));
  return std::unique_ptr<PrimaryContext>(new PrimaryContext(std::move(driver), ordinal, ctx));
}

PrimaryContext::~PrimaryContext() { (void)driver_->ReleasePrimaryContext(ordinal_); }

}  // namespace strata
