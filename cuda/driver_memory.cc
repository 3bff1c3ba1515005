// CudaDriver: copies, memory, virtual memory management and kernel launches.
#include "cuda/driver_api.h"
#include "cuda/driver_table.h"

namespace strata {

#if STRATA_HAVE_CUDA_HEADERS

namespace {

CUmemLocation DeviceLocation(int ordinal) {
  CUmemLocation l{};
  l.type = CU_MEM_LOCATION_TYPE_DEVICE;
  l.id = ordinal;
  return l;
}

CUmemLocation HostLocation() {
  CUmemLocation l{};
  l.type = CU_MEM_LOCATION_TYPE_HOST;
  l.id = 0;
  return l;
}

CUmemcpy3DOperand PointerOperand(uint64_t address, uint64_t pitch, CUmemLocation hint) {
  CUmemcpy3DOperand o{};
  o.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  o.op.ptr.ptr = address;
  o.op.ptr.rowLength = pitch;  // elements; one element is one byte for pointer copies
  o.op.ptr.layerHeight = 0;    // depth is 1
  o.op.ptr.locHint = hint;
  return o;
}

// A batch must fit the arrays it is staged in (CudaCopyArrays' capacity).
Status CheckBatchFits(size_t copies, size_t capacity) {
  if (copies <= capacity) return Status::Ok();
  return Status::InvalidArgument("batch of " + std::to_string(copies) + " copies exceeds " +
                                 std::to_string(capacity));
}

}  // namespace

CudaCopyArrays::CudaCopyArrays(size_t capacity)
    : capacity_(capacity), impl_(std::make_unique<Impl>()) {
  impl_->dst.resize(capacity);
  impl_->src.resize(capacity);
  impl_->sizes.resize(capacity);
  impl_->ops.resize(capacity);
}

CudaCopyArrays::~CudaCopyArrays() = default;

bool CudaDriver::has_batch_copy() const { return api_->cuMemcpyBatchAsync_ != nullptr; }
bool CudaDriver::has_batch_copy_3d() const { return api_->cuMemcpy3DBatchAsync_ != nullptr; }

Status CudaDriver::BatchCopyAsync(TransferDirection direction, int ordinal,
                                  std::span<const CopyOp> ops, CudaCopyArrays& arrays,
                                  CudaStream stream) const {
  if (api_->cuMemcpyBatchAsync_ == nullptr) return Missing("cuMemcpyBatchAsync (CUDA 13)");
  if (ops.empty()) return Status::Ok();
  STRATA_RETURN_IF_ERROR(CheckBatchFits(ops.size(), arrays.capacity()));
  const bool to_host = direction == TransferDirection::kDeviceToHost;
  CudaCopyArrays::Impl& a = *arrays.impl_;
  for (size_t i = 0; i < ops.size(); ++i) {
    STRATA_ASSERT(ops[i].height == 1, "BatchCopyAsync takes 1-D copies");
    const auto host = reinterpret_cast<CUdeviceptr>(ops[i].host);
    a.dst[i] = to_host ? host : ops[i].device;
    a.src[i] = to_host ? ops[i].device : host;
    a.sizes[i] = ops[i].width;
  }
  CUmemcpyAttributes attr{};
  attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  attr.srcLocHint = to_host ? DeviceLocation(ordinal) : HostLocation();
  attr.dstLocHint = to_host ? HostLocation() : DeviceLocation(ordinal);
  attr.flags = CU_MEMCPY_FLAG_DEFAULT;
  size_t attr_index = 0;
  return Check(api_->cuMemcpyBatchAsync_(a.dst.data(), a.src.data(), a.sizes.data(), ops.size(),
                                         &attr, &attr_index, 1, stream),
               "cuMemcpyBatchAsync");
}

Status CudaDriver::BatchCopy2DAsync(TransferDirection direction, int ordinal,
                                    std::span<const CopyOp> ops, CudaCopyArrays& arrays,
                                    CudaStream stream) const {
  if (api_->cuMemcpy3DBatchAsync_ == nullptr) return Missing("cuMemcpy3DBatchAsync (CUDA 13)");
  if (ops.empty()) return Status::Ok();
  STRATA_RETURN_IF_ERROR(CheckBatchFits(ops.size(), arrays.capacity()));
  const bool to_host = direction == TransferDirection::kDeviceToHost;
  CudaCopyArrays::Impl& a = *arrays.impl_;
  for (size_t i = 0; i < ops.size(); ++i) {
    const CopyOp& op = ops[i];
    CUmemcpy3DOperand device = PointerOperand(op.device, op.device_pitch, DeviceLocation(ordinal));
    CUmemcpy3DOperand host =
        PointerOperand(reinterpret_cast<uint64_t>(op.host), op.host_pitch, HostLocation());
    CUDA_MEMCPY3D_BATCH_OP& b = a.ops[i];
    b = {};
    b.src = to_host ? device : host;
    b.dst = to_host ? host : device;
    b.extent = {op.width, op.height, 1};
    b.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    b.flags = CU_MEMCPY_FLAG_DEFAULT;
  }
  return Check(api_->cuMemcpy3DBatchAsync_(ops.size(), a.ops.data(), 0, stream),
               "cuMemcpy3DBatchAsync");
}

Status CudaDriver::CopyAsync(TransferDirection direction, uint64_t device, void* host,
                             uint64_t bytes, CudaStream stream) const {
  if (direction == TransferDirection::kDeviceToHost) {
    return Check(api_->cuMemcpyDtoHAsync_(host, device, bytes, stream), "cuMemcpyDtoHAsync");
  }
  return Check(api_->cuMemcpyHtoDAsync_(device, host, bytes, stream), "cuMemcpyHtoDAsync");
}

Status CudaDriver::CopySync(TransferDirection direction, uint64_t device, void* host,
                            uint64_t bytes) const {
  if (direction == TransferDirection::kDeviceToHost) {
    return Check(api_->cuMemcpyDtoH_(host, device, bytes), "cuMemcpyDtoH");
  }
  return Check(api_->cuMemcpyHtoD_(device, host, bytes), "cuMemcpyHtoD");
}

Result<uint64_t> CudaDriver::MemAlloc(uint64_t bytes) const {
  CUdeviceptr p = 0;
  Status s = Check(api_->cuMemAlloc_(&p, bytes), "cuMemAlloc");
  if (!s.ok()) return s.WithContext(std::to_string(bytes) + " bytes");
  return static_cast<uint64_t>(p);
}

Status CudaDriver::MemFree(uint64_t device) const {
  return Check(api_->cuMemFree_(device), "cuMemFree");
}

Status CudaDriver::MemsetD8(uint64_t device, uint8_t value, uint64_t bytes) const {
  return Check(api_->cuMemsetD8_(device, value, bytes), "cuMemsetD8");
}

Result<std::pair<uint64_t, uint64_t>> CudaDriver::MemInfo() const {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  STRATA_RETURN_IF_ERROR(Check(api_->cuMemGetInfo_(&free_bytes, &total_bytes), "cuMemGetInfo"));
  return std::pair<uint64_t, uint64_t>(free_bytes, total_bytes);
}

Result<void*> CudaDriver::MemAllocHost(uint64_t bytes) const {
  void* p = nullptr;
  STRATA_RETURN_IF_ERROR(Check(api_->cuMemAllocHost_(&p, bytes), "cuMemAllocHost"));
  return p;
}

Status CudaDriver::MemFreeHost(void* host) const {
  return Check(api_->cuMemFreeHost_(host), "cuMemFreeHost");
}

Status CudaDriver::HostRegister(void* host, uint64_t bytes) const {
  return Check(api_->cuMemHostRegister_(host, bytes,
                                        CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP),
               "cuMemHostRegister_v2");
}

Status CudaDriver::HostUnregister(void* host) const {
  return Check(api_->cuMemHostUnregister_(host), "cuMemHostUnregister");
}

Result<uint64_t> CudaDriver::HostDevicePointer(void* host) const {
  CUdeviceptr device = 0;
  STRATA_RETURN_IF_ERROR(
      Check(api_->cuMemHostGetDevicePointer_(&device, host, 0), "cuMemHostGetDevicePointer_v2"));
  return static_cast<uint64_t>(device);
}

bool CudaDriver::has_vmm() const {
  return api_->cuMemCreate_ != nullptr && api_->cuMemAddressReserve_ != nullptr &&
         api_->cuMemMap_ != nullptr && api_->cuMemSetAccess_ != nullptr &&
         api_->cuMemUnmap_ != nullptr && api_->cuMemRelease_ != nullptr &&
         api_->cuMemAddressFree_ != nullptr && api_->cuMemGetAllocationGranularity_ != nullptr;
}

namespace {

CUmemAllocationProp HostNumaProperties(int numa_node) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  prop.location.id = numa_node;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  return prop;
}

}  // namespace

Result<uint64_t> CudaDriver::HostNumaGranularity(int numa_node) const {
  if (!has_vmm()) return Missing("cuMemGetAllocationGranularity");
  CUmemAllocationProp prop = HostNumaProperties(numa_node);
  size_t granularity = 0;
  STRATA_RETURN_IF_ERROR(Check(api_->cuMemGetAllocationGranularity_(
                                   &granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
                               "cuMemGetAllocationGranularity"));
  return static_cast<uint64_t>(granularity);
}

Result<CudaAllocationHandle> CudaDriver::CreateHostNumaAllocation(int numa_node,
                                                                  uint64_t bytes) const {
  if (!has_vmm()) return Missing("cuMemCreate");
  CUmemAllocationProp prop = HostNumaProperties(numa_node);
  CUmemGenericAllocationHandle handle = 0;
  STRATA_RETURN_IF_ERROR(Check(api_->cuMemCreate_(&handle, bytes, &prop, 0), "cuMemCreate"));
  return static_cast<CudaAllocationHandle>(handle);
}

Result<uint64_t> CudaDriver::ReserveAddress(uint64_t bytes, uint64_t alignment) const {
  if (!has_vmm()) return Missing("cuMemAddressReserve");
  CUdeviceptr p = 0;
  STRATA_RETURN_IF_ERROR(
      Check(api_->cuMemAddressReserve_(&p, bytes, alignment, 0, 0), "cuMemAddressReserve"));
  return static_cast<uint64_t>(p);
}

Status CudaDriver::MapAllocation(uint64_t address, uint64_t bytes,
                                 CudaAllocationHandle handle) const {
  if (!has_vmm()) return Missing("cuMemMap");
  return Check(api_->cuMemMap_(address, bytes, 0, handle, 0), "cuMemMap");
}

Status CudaDriver::SetDeviceAndHostAccess(uint64_t address, uint64_t bytes, int ordinal,
                                          int numa_node) const {
  if (!has_vmm()) return Missing("cuMemSetAccess");
  CUmemAccessDesc access[2] = {};
  access[0].location = DeviceLocation(ordinal);
  access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  access[1].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  access[1].location.id = numa_node;
  access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return Check(api_->cuMemSetAccess_(address, bytes, access, 2), "cuMemSetAccess");
}

Status CudaDriver::Unmap(uint64_t address, uint64_t bytes) const {
  if (!has_vmm()) return Missing("cuMemUnmap");
  return Check(api_->cuMemUnmap_(address, bytes), "cuMemUnmap");
}

Status CudaDriver::ReleaseAllocation(CudaAllocationHandle handle) const {
  if (!has_vmm()) return Missing("cuMemRelease");
  return Check(api_->cuMemRelease_(handle), "cuMemRelease");
}

Status CudaDriver::FreeAddress(uint64_t address, uint64_t bytes) const {
  if (!has_vmm()) return Missing("cuMemAddressFree");
  return Check(api_->cuMemAddressFree_(address, bytes), "cuMemAddressFree");
}

Result<CudaModule> CudaDriver::LoadModule(const char* image) const {
  CUmodule module = nullptr;
  STRATA_RETURN_IF_ERROR(Check(api_->cuModuleLoadData_(&module, image), "cuModuleLoadData"));
  return module;
}

Status CudaDriver::UnloadModule(CudaModule module) const {
  return Check(api_->cuModuleUnload_(module), "cuModuleUnload");
}

Result<CudaFunction> CudaDriver::GetFunction(CudaModule module, const char* name) const {
  CUfunction fn = nullptr;
  STRATA_RETURN_IF_ERROR(
      Check(api_->cuModuleGetFunction_(&fn, module, name), "cuModuleGetFunction"));
  return fn;
}

Status CudaDriver::LaunchKernel(CudaFunction function, uint32_t grid_x, uint32_t block_x,
                                void** params, CudaStream stream) const {
  return Check(
      api_->cuLaunchKernel_(function, grid_x, 1, 1, block_x, 1, 1, 0, stream, params, nullptr),
      "cuLaunchKernel");
}

#else  // built without the CUDA headers: unreachable, since no CudaDriver loads

struct CudaCopyArrays::Impl {};
CudaCopyArrays::CudaCopyArrays(size_t capacity) : capacity_(capacity) {}
CudaCopyArrays::~CudaCopyArrays() = default;
bool CudaDriver::has_batch_copy() const { return false; }
bool CudaDriver::has_batch_copy_3d() const { return false; }
Status CudaDriver::BatchCopyAsync(TransferDirection, int, std::span<const CopyOp>, CudaCopyArrays&,
                                  CudaStream) const {
  return Missing("cuMemcpyBatchAsync");
}
Status CudaDriver::BatchCopy2DAsync(TransferDirection, int, std::span<const CopyOp>,
                                    CudaCopyArrays&, CudaStream) const {
  return Missing("cuMemcpy3DBatchAsync");
}
Status CudaDriver::CopyAsync(TransferDirection, uint64_t, void*, uint64_t, CudaStream) const {
  return Missing("cuMemcpyAsync");
}
Status CudaDriver::CopySync(TransferDirection, uint64_t, void*, uint64_t) const {
  return Missing("cuMemcpy");
}
Result<uint64_t> CudaDriver::MemAlloc(uint64_t) const { return Missing("cuMemAlloc"); }
Status CudaDriver::MemFree(uint64_t) const { return Missing("cuMemFree"); }
Status CudaDriver::MemsetD8(uint64_t, uint8_t, uint64_t) const { return Missing("cuMemsetD8"); }
Result<std::pair<uint64_t, uint64_t>> CudaDriver::MemInfo() const {
  return Missing("cuMemGetInfo");
}
Result<void*> CudaDriver::MemAllocHost(uint64_t) const { return Missing("cuMemAllocHost"); }
Status CudaDriver::MemFreeHost(void*) const { return Missing("cuMemFreeHost"); }
Status CudaDriver::HostRegister(void*, uint64_t) const { return Missing("cuMemHostRegister_v2"); }
Status CudaDriver::HostUnregister(void*) const { return Missing("cuMemHostUnregister"); }
Result<uint64_t> CudaDriver::HostDevicePointer(void*) const {
  return Missing("cuMemHostGetDevicePointer_v2");
}
bool CudaDriver::has_vmm() const { return false; }
Result<uint64_t> CudaDriver::HostNumaGranularity(int) const {
  return Missing("cuMemGetAllocationGranularity");
}
Result<CudaAllocationHandle> CudaDriver::CreateHostNumaAllocation(int, uint64_t) const {
  return Missing("cuMemCreate");
}
Result<uint64_t> CudaDriver::ReserveAddress(uint64_t, uint64_t) const {
  return Missing("cuMemAddressReserve");
}
Status CudaDriver::MapAllocation(uint64_t, uint64_t, CudaAllocationHandle) const {
  return Missing("cuMemMap");
}
Status CudaDriver::SetDeviceAndHostAccess(uint64_t, uint64_t, int, int) const {
  return Missing("cuMemSetAccess");
}
Status CudaDriver::Unmap(uint64_t, uint64_t) const { return Missing("cuMemUnmap"); }
Status CudaDriver::ReleaseAllocation(CudaAllocationHandle) const { return Missing("cuMemRelease"); }
Status CudaDriver::FreeAddress(uint64_t, uint64_t) const { return Missing("cuMemAddressFree"); }
Result<CudaModule> CudaDriver::LoadModule(const char*) const { return Missing("cuModuleLoadData"); }
Status CudaDriver::UnloadModule(CudaModule) const { return Missing("cuModuleUnload"); }
Result<CudaFunction> CudaDriver::GetFunction(CudaModule, const char*) const {
  return Missing("cuModuleGetFunction");
}
Status CudaDriver::LaunchKernel(CudaFunction, uint32_t, uint32_t, void**, CudaStream) const {
  return Missing("cuLaunchKernel");
}

#endif  // STRATA_HAVE_CUDA_HEADERS

}  // namespace strata
